package scripted

// Fixtures of the stress_test phase: bootstrap (a scenario set), scenario (a
// run_stress_scenarios call and its report), and feedback ending in pass or revise.

// stressOutput is the run_stress_scenarios result.
const stressOutput = `{"stress_report_id":"rep-{id}","scenario_set_id":"{scenario_set_id}","results":[` +
	`{"scenario":"covid_crash_2020","pnl":-0.14,"max_drawdown":0.19},` +
	`{"scenario":"luna_collapse_2022","pnl":-0.09,"max_drawdown":0.13},` +
	`{"scenario":"ftx_failure_2022","pnl":-0.07,"max_drawdown":0.11},` +
	`{"scenario":"flash_crash_1h","pnl":-0.06,"max_drawdown":0.08},` +
	`{"scenario":"volatility_spike","pnl":-0.04,"max_drawdown":0.10}],"worst_drawdown":0.19}`

// stressScenarios returns the scenarios of the stress_test phase.
func stressScenarios() map[string]scenario {
	return map[string]scenario{
		"stress_bootstrap":       stressBootstrap(),
		"stress_scenario":        stressScenario(),
		"stress_feedback_pass":   stressFeedbackPass(),
		"stress_feedback_revise": stressFeedbackRevise(),
	}
}

// stressBootstrap proposes a scenario set and registers it.
func stressBootstrap() scenario {
	return scenario{
		phase: "stress_test",
		replies: map[language]reply{
			english: {
				phases: []phase{
					{"Pick the shocks", "Choose historical and synthetic shocks that hurt a long-only BTC momentum strategy: sharp crashes, exchange failures, volatility spikes."},
					{"Register the set", "Keep the five scenarios as one scenario set, so later runs can be compared."},
				},
				quote: quoteEN,
				final: "To stress test **BTC momentum** I have put together five scenarios:\n\n" +
					"1. **COVID crash (March 2020):** BTC fell about 50% in two days.\n" +
					"2. **LUNA collapse (May 2022):** a fast cascade across crypto markets.\n" +
					"3. **FTX failure (November 2022):** an exchange default with sudden gaps in liquidity.\n" +
					"4. **Flash crash:** a synthetic 20% drop within one hour.\n" +
					"5. **Volatility spike:** volatility tripled for two weeks.\n\n" +
					"Shall I run them? You can also add a scenario of your own.\n",
				queries: []string{"bitcoin historical crash scenarios stress test", "crypto flash crash liquidity gap"},
				ui: `[{"type":"scenario_table","scenario_set_id":"scn-{id}","columns":["Scenario","Shock"],"rows":[` +
					`["COVID crash (March 2020)","-50% in 2 days"],["LUNA collapse (May 2022)","market-wide cascade"],` +
					`["FTX failure (November 2022)","exchange default, liquidity gaps"],["Flash crash","-20% in 1 hour"],` +
					`["Volatility spike","3x volatility for 2 weeks"]]}]`,
				patch: `{"scenario_set_id":"scn-{id}","stress_test_decision":"pending"}`,
			},
			chinese: {
				phases: []phase{
					{"挑选冲击情景", "挑选会重创只做多的比特币动量策略的历史和合成冲击：急跌、交易所倒闭、波动率飙升。"},
					{"登记情景集", "把这五个情景存为一个情景集，方便以后比较不同轮次的结果。"},
				},
				quote: quoteZH,
				final: "为了对 **BTC 动量** 策略做压力测试，我准备了五个情景：\n\n" +
					"1. **新冠暴跌（2020年3月）：** 比特币两天内下跌约 50%。\n" +
					"2. **LUNA 崩盘（2022年5月）：** 整个加密市场连锁下跌。\n" +
					"3. **FTX 倒闭（2022年11月）：** 交易所违约，流动性突然断档。\n" +
					"4. **闪崩：** 合成情景，一小时内下跌 20%。\n" +
					"5. **波动率飙升：** 波动率连续两周放大到三倍。\n\n" +
					"要现在运行吗？你也可以加入自己的情景。\n",
				queries: []string{"比特币 历史暴跌 压力测试情景", "加密货币 闪崩 流动性断档"},
				ui: `[{"type":"scenario_table","scenario_set_id":"scn-{id}","columns":["情景","冲击"],"rows":[` +
					`["新冠暴跌（2020年3月）","两天下跌 50%"],["LUNA 崩盘（2022年5月）","全市场连锁下跌"],` +
					`["FTX 倒闭（2022年11月）","交易所违约，流动性断档"],["闪崩","一小时下跌 20%"],` +
					`["波动率飙升","两周内波动率三倍"]]}]`,
				patch: `{"scenario_set_id":"scn-{id}","stress_test_decision":"pending"}`,
			},
		},
	}
}

// stressScenario runs the scenario set and reports the results.
func stressScenario() scenario {
	return scenario{
		phase: "stress_test",
		calls: []toolCall{
			{server: serverRiskLab, name: "run_stress_scenarios", arguments: `{"scenario_set_id":"{scenario_set_id}"}`, output: stressOutput},
		},
		replies: map[language]reply{
			english: {
				phases: []phase{
					{"Run the scenarios", "Called run_stress_scenarios on risk_lab with the registered scenario set."},
					{"Find the weak spot", "The worst case is the COVID crash: the price gapped through the trailing stop, giving a 19% drawdown. The other four stay at or under 13%."},
				},
				quote: quoteEN,
				final: "All five scenarios have run. The worst case is the **COVID crash**: a 19% drawdown and a 14% loss, because the price gapped through the trailing stop. " +
					"The other four stayed at or under 13% drawdown.\n\n" +
					"| Scenario | Loss | Max drawdown |\n|---|---|---|\n" +
					"| COVID crash | -14% | 19% |\n| LUNA collapse | -9% | 13% |\n| FTX failure | -7% | 11% |\n" +
					"| Flash crash | -6% | 8% |\n| Volatility spike | -4% | 10% |\n\n" +
					"Is a 19% worst-case drawdown acceptable to you, or should we go back and tighten the stop?\n",
				queries: []string{"stop loss gap risk in crypto crashes", "acceptable max drawdown for a trading strategy"},
				ui: `[{"type":"stress_report","stress_report_id":"rep-{id}","scenario_set_id":"{scenario_set_id}","worst_scenario":"COVID crash","worst_drawdown":0.19,` +
					`"rows":[["COVID crash","-14%","19%"],["LUNA collapse","-9%","13%"],["FTX failure","-7%","11%"],["Flash crash","-6%","8%"],["Volatility spike","-4%","10%"]]}]`,
				patch: `{"stress_report_id":"rep-{id}"}`,
			},
			chinese: {
				phases: []phase{
					{"运行情景", "在 risk_lab 上用已登记的情景集调用了 run_stress_scenarios。"},
					{"找出薄弱环节", "最坏的情况是新冠暴跌：价格跳空穿过移动止损，回撤 19%。其他四个情景的回撤都不超过 13%。"},
				},
				quote: quoteZH,
				final: "五个情景都已运行完毕。最坏的是 **新冠暴跌**：回撤 19%，亏损 14%，原因是价格跳空穿过了移动止损。" +
					"其他四个情景的回撤都不超过 13%。\n\n" +
					"| 情景 | 亏损 | 最大回撤 |\n|---|---|---|\n" +
					"| 新冠暴跌 | -14% | 19% |\n| LUNA 崩盘 | -9% | 13% |\n| FTX 倒闭 | -7% | 11% |\n" +
					"| 闪崩 | -6% | 8% |\n| 波动率飙升 | -4% | 10% |\n\n" +
					"最坏情况下 19% 的回撤你能接受吗？还是我们回到策略阶段收紧止损？\n",
				queries: []string{"加密货币暴跌 止损跳空风险", "交易策略 可接受的最大回撤"},
				ui: `[{"type":"stress_report","stress_report_id":"rep-{id}","scenario_set_id":"{scenario_set_id}","worst_scenario":"新冠暴跌","worst_drawdown":0.19,` +
					`"rows":[["新冠暴跌","-14%","19%"],["LUNA 崩盘","-9%","13%"],["FTX 倒闭","-7%","11%"],["闪崩","-6%","8%"],["波动率飙升","-4%","10%"]]}]`,
				patch: `{"stress_report_id":"rep-{id}"}`,
			},
		},
	}
}

// stressFeedbackPass records the user's acceptance: the strategy passes.
func stressFeedbackPass() scenario {
	return scenario{
		phase: "stress_test",
		replies: map[language]reply{
			english: {
				phases: []phase{
					{"Weigh the feedback", "The user accepts a 19% worst-case drawdown; every scenario stayed inside that limit."},
					{"Decide", "The strategy passes the stress test; the next phase prepares the deployment."},
				},
				quote: quoteEN,
				final: "Agreed: a 19% worst-case drawdown is within your limit, so **BTC momentum** passes the stress test. " +
					"Next we prepare the deployment, starting with paper trading and a risk guard.\n",
				queries: []string{"paper trading a crypto strategy after stress testing"},
				ui:      `[{"type":"stress_report","stress_report_id":"{stress_report_id}","verdict":"pass","worst_drawdown":0.19}]`,
				patch:   `{"stress_test_decision":"pass","summary":"Passed all 5 stress scenarios; worst drawdown 19% (COVID crash), within the user's limit."}`,
			},
			chinese: {
				phases: []phase{
					{"考虑反馈", "用户可以接受最坏 19% 的回撤；所有情景都在这个限度以内。"},
					{"做出结论", "策略通过压力测试；下一阶段准备部署。"},
				},
				quote: quoteZH,
				final: "好的：最坏 19% 的回撤在你的承受范围内，所以 **BTC 动量** 策略通过了压力测试。" +
					"接下来我们准备部署，先从模拟交易和风控守卫开始。\n",
				queries: []string{"加密货币策略 压力测试后 模拟交易"},
				ui:      `[{"type":"stress_report","stress_report_id":"{stress_report_id}","verdict":"pass","worst_drawdown":0.19}]`,
				patch:   `{"stress_test_decision":"pass","summary":"5 个压力情景全部通过；最坏回撤 19%（新冠暴跌），在用户的承受范围内。"}`,
			},
		},
	}
}

// stressFeedbackRevise records the user's refusal: back to the strategy.
func stressFeedbackRevise() scenario {
	return scenario{
		phase: "stress_test",
		replies: map[language]reply{
			english: {
				phases: []phase{
					{"Weigh the feedback", "The user finds a 19% drawdown in a crash too deep for their capital."},
					{"Decide", "The strategy must be revised: a tighter trailing stop limits gap losses; then backtest and stress test again."},
				},
				quote: quoteEN,
				final: "Understood: a 19% drawdown in a crash is more than you want to risk, so **BTC momentum** does not pass as it is. " +
					"I suggest we go back to the strategy and tighten the trailing stop from 5% to 3%, then run the backtest and the stress test again.\n",
				queries: []string{"tighter trailing stop effect on momentum returns"},
				ui:      `[{"type":"stress_report","stress_report_id":"{stress_report_id}","verdict":"revise","worst_drawdown":0.19}]`,
				patch:   `{"stress_test_decision":"revise","summary":"Worst drawdown 19% (COVID crash) is above the user's limit; tighten the trailing stop to 3% and test again."}`,
			},
			chinese: {
				phases: []phase{
					{"考虑反馈", "用户认为暴跌时 19% 的回撤对自己的资金来说太深。"},
					{"做出结论", "策略需要修改：收紧移动止损以减少跳空损失，然后重新回测和压力测试。"},
				},
				quote: quoteZH,
				final: "明白：暴跌时 19% 的回撤超出了你愿意承担的风险，所以 **BTC 动量** 策略目前不能通过。" +
					"我建议回到策略阶段，把移动止损从 5% 收紧到 3%，然后重新回测并再做一次压力测试。\n",
				queries: []string{"收紧移动止损 对动量策略收益的影响"},
				ui:      `[{"type":"stress_report","stress_report_id":"{stress_report_id}","verdict":"revise","worst_drawdown":0.19}]`,
				patch:   `{"stress_test_decision":"revise","summary":"最坏回撤 19%（新冠暴跌）超出用户的承受范围；把移动止损收紧到 3% 后重新测试。"}`,
			},
		},
	}
}
