package scripted

// Fixtures of the strategy phase: draft (with a failed and retried validate_strategy),
// backtest, confirm, and two scenarios the server must refuse in part (bad_patch,
// genui_not_allowed). They are what a well-behaved model would answer, not prompts.

// btcMomentumSpec is the spec of the drafted strategy, shared by the validate_strategy
// arguments, the patch's strategy_draft and the strategy card.
const btcMomentumSpec = `{"symbol":"BTC-USD","timeframe":"4h",` +
	`"entry":{"indicator":"rate_of_change","lookback":20,"threshold":0.03},` +
	`"exit":{"trailing_stop":0.05,"take_profit":0.12},"position_size":0.1}`

// validateStrategyArgs are the arguments of both validate_strategy calls: the retry repeats
// the failed call exactly, so the server can drop the mended failure.
const validateStrategyArgs = `{"name":"BTC momentum","spec":` + btcMomentumSpec + `}`

// backtestOutput is the run_backtest result: the equity series (the server draws it) and
// the metrics. The drawdown from 115 to 101.2 is the 12% of max_drawdown.
const backtestOutput = `{"series":[{"name":"equity","points":[[0,100],[1,103],[2,108],[3,112],[4,115],` +
	`[5,107],[6,101.2],[7,106],[8,113],[9,119],[10,124],[11,131]]}],` +
	`"metrics":{"sharpe":1.4,"max_drawdown":0.12}}`

// strategyScenarios returns the scenarios of the strategy phase.
func strategyScenarios() map[string]scenario {
	return map[string]scenario{
		"strategy_draft":    strategyDraft(),
		"strategy_backtest": strategyBacktest(),
		"strategy_confirm":  strategyConfirm(),
		"bad_patch":         badPatch(),
		"genui_not_allowed": genUINotAllowed(),
	}
}

// strategyDraft proposes the strategy after validate_strategy failed once and succeeded on
// the retry with the same arguments.
func strategyDraft() scenario {
	return scenario{
		phase: "strategy",
		calls: []toolCall{
			{server: serverStrategyEngine, name: "validate_strategy", arguments: validateStrategyArgs,
				failure: "market data request timed out after 5s while loading BTC-USD 4h candles; the call can be retried"},
			{server: serverStrategyEngine, name: "validate_strategy", arguments: validateStrategyArgs,
				output: `{"strategy_id":"{uuid}","status":"validated"}`},
		},
		replies: map[language]reply{
			english: {
				phases: []phase{
					{"Read the request", "The user wants a momentum strategy on BTC. Pin down the market, the timeframe and how positions are opened and closed."},
					{"Draft the rules", "Enter when the 20-bar rate of change on 4-hour candles is above 3%; leave on a 5% trailing stop or a 12% take-profit; put 10% of capital in each position."},
					{"Validate the draft", "Called validate_strategy on strategy_engine. The first call timed out while loading market data; the same call, retried, succeeded and the engine accepted the rules."},
				},
				quote: quoteEN,
				final: "Here is a first draft of a **BTC momentum** strategy:\n\n" +
					"| Rule | Setting |\n|---|---|\n" +
					"| Market | BTC-USD, 4-hour candles |\n" +
					"| Entry | 20-bar rate of change above +3% |\n" +
					"| Exit | 5% trailing stop or +12% take-profit |\n" +
					"| Position size | 10% of capital |\n\n" +
					"The strategy engine checked the rules and found no problems (its first check timed out and passed on the retry). " +
					"Next I can backtest it on 2023–2025 data. Would you like to change anything first, such as the lookback or the stop distance?\n",
				queries: []string{"BTC momentum strategy rate of change", "trailing stop for crypto momentum trading"},
				ui: `[{"type":"strategy_card","name":"BTC momentum","status":"draft","spec":` + btcMomentumSpec + `,` +
					`"rules":["Entry: 20-bar rate of change above +3% on 4-hour candles","Exit: 5% trailing stop or +12% take-profit","Size: 10% of capital per position"]}]`,
				patch: `{"strategy_draft":{"name":"BTC momentum","spec":` + btcMomentumSpec + `},"strategy_status":"draft",` +
					`"summary":"BTC momentum draft: 4-hour candles, enter above +3% 20-bar rate of change, exit on a 5% trailing stop or +12% take-profit, 10% of capital per position."}`,
			},
			chinese: {
				phases: []phase{
					{"理解需求", "用户想要一个比特币动量策略。需要先确定交易市场、K线周期，以及开仓和平仓的规则。"},
					{"起草规则", "4小时K线上20根K线的变化率高于3%时开仓；5%移动止损或12%止盈时平仓；每笔仓位占资金的10%。"},
					{"校验草稿", "在 strategy_engine 上调用了 validate_strategy。第一次调用在加载行情数据时超时；用相同参数重试后成功，引擎确认规则有效。"},
				},
				quote: quoteZH,
				final: "这是 **BTC 动量** 策略的初稿：\n\n" +
					"| 规则 | 设置 |\n|---|---|\n" +
					"| 市场 | BTC-USD，4小时K线 |\n" +
					"| 开仓 | 20根K线变化率高于 +3% |\n" +
					"| 平仓 | 5% 移动止损或 +12% 止盈 |\n" +
					"| 仓位 | 每笔占资金的 10% |\n\n" +
					"策略引擎检查了这些规则，没有发现问题（第一次检查超时，重试后通过）。" +
					"下一步我可以用 2023–2025 年的数据做回测。要先调整什么吗？比如回看周期或止损距离。\n",
				queries: []string{"比特币动量策略 变化率指标", "加密货币动量交易 移动止损"},
				ui: `[{"type":"strategy_card","name":"BTC momentum","status":"draft","spec":` + btcMomentumSpec + `,` +
					`"rules":["开仓：4小时K线上20根K线变化率高于 +3%","平仓：5% 移动止损或 +12% 止盈","仓位：每笔占资金的 10%"]}]`,
				patch: `{"strategy_draft":{"name":"BTC momentum","spec":` + btcMomentumSpec + `},"strategy_status":"draft",` +
					`"summary":"BTC 动量策略初稿：4小时K线，20根K线变化率高于3%开仓，5%移动止损或12%止盈平仓，每笔仓位占资金的10%。"}`,
			},
		},
	}
}

// strategyBacktest reports a completed run_backtest.
func strategyBacktest() scenario {
	return scenario{
		phase: "strategy",
		calls: []toolCall{
			{server: serverStrategyEngine, name: "run_backtest",
				arguments: `{"symbol":"BTC-USD","from":"2023-01-01","to":"2025-12-31","initial_capital":100}`,
				output:    backtestOutput},
		},
		replies: map[language]reply{
			english: {
				phases: []phase{
					{"Run the backtest", "Called run_backtest on strategy_engine for 2023-01-01 to 2025-12-31 with a starting equity of 100."},
					{"Read the results", "Equity grew from 100 to 131. Sharpe ratio 1.4; the maximum drawdown of 12% ran from the peak of 115 down to 101, in a sideways market that stopped out several trades in a row."},
				},
				quote: quoteEN,
				final: "The backtest of **BTC momentum** over 2023–2025 is done:\n\n" +
					"- **Return:** equity went from 100 to 131 (+31%).\n" +
					"- **Sharpe ratio:** 1.4, a sound risk-adjusted result for a single-asset strategy.\n" +
					"- **Maximum drawdown:** 12%, from the peak of 115 down to 101.\n\n" +
					"Most of the drawdown came from a run of stopped-out trades in a sideways market. " +
					"If these numbers suit you, the next step is to confirm the strategy and move on to stress testing; " +
					"otherwise we can raise the entry threshold and run the backtest again.\n",
				queries: []string{"Sharpe ratio 1.4 good for crypto strategy", "reduce drawdown momentum strategy sideways market"},
				ui:      `[{"type":"metric_table","title":"Backtest 2023–2025","columns":["Metric","Value"],"rows":[["Total return","+31%"],["Sharpe ratio","1.4"],["Max drawdown","12%"]]}]`,
				patch:   `{"backtest_status":"completed","strategy_status":"validated"}`,
			},
			chinese: {
				phases: []phase{
					{"运行回测", "在 strategy_engine 上调用 run_backtest，区间为 2023-01-01 至 2025-12-31，初始净值 100。"},
					{"解读结果", "净值从 100 增长到 131。夏普比率 1.4；最大回撤 12%，从高点 115 回落到 101，发生在横盘行情中，连续几笔交易被止损。"},
				},
				quote: quoteZH,
				final: "**BTC 动量** 策略 2023–2025 年的回测已完成：\n\n" +
					"- **收益：** 净值从 100 增长到 131（+31%）。\n" +
					"- **夏普比率：** 1.4，对单一资产策略来说，风险调整后的收益不错。\n" +
					"- **最大回撤：** 12%，从高点 115 回落到 101。\n\n" +
					"回撤主要来自横盘行情中连续几笔被止损的交易。" +
					"如果你认可这些结果，下一步就是确认策略并进入压力测试；" +
					"否则我们可以提高开仓阈值，再回测一次。\n",
				queries: []string{"加密货币策略 夏普比率 1.4", "动量策略 横盘行情 降低回撤"},
				ui:      `[{"type":"metric_table","title":"回测 2023–2025","columns":["指标","数值"],"rows":[["总收益","+31%"],["夏普比率","1.4"],["最大回撤","12%"]]}]`,
				patch:   `{"backtest_status":"completed","strategy_status":"validated"}`,
			},
		},
	}
}

// strategyConfirm asks the user to confirm the strategy; it changes no artifact.
func strategyConfirm() scenario {
	return scenario{
		phase: "strategy",
		replies: map[language]reply{
			english: {
				phases: []phase{
					{"Check what is settled", "The draft passed validation and the backtest completed: Sharpe ratio 1.4, maximum drawdown 12%."},
					{"Ask for the decision", "Moving on needs the user's explicit confirmation; offer to confirm, to change the rules, or to backtest another period."},
				},
				quote: quoteEN,
				final: "**BTC momentum** is ready for the next step: the rules passed validation, and the 2023–2025 backtest gave a Sharpe ratio of 1.4 with a 12% maximum drawdown.\n\n" +
					"Do you confirm this strategy? Once you do, we stress test it against market crashes. " +
					"You can also change the rules first or backtest another period.\n",
				queries: []string{"how to stress test a crypto trading strategy"},
				ui: `[{"type":"choice_prompt","question":"Confirm BTC momentum and start stress testing?","options":[` +
					`{"id":"confirm","label":"Confirm and stress test"},{"id":"revise","label":"Change the rules"},{"id":"rerun_backtest","label":"Backtest another period"}]}]`,
			},
			chinese: {
				phases: []phase{
					{"核对已确定的内容", "草稿已通过校验，回测已完成：夏普比率 1.4，最大回撤 12%。"},
					{"请用户决定", "进入下一阶段需要用户明确确认；提供三个选择：确认、修改规则、换一个区间回测。"},
				},
				quote: quoteZH,
				final: "**BTC 动量** 策略可以进入下一步了：规则已通过校验，2023–2025 年的回测夏普比率为 1.4，最大回撤 12%。\n\n" +
					"你确认这个策略吗？确认后，我们会用历次市场暴跌对它做压力测试。" +
					"你也可以先修改规则，或者换一个区间再回测。\n",
				queries: []string{"加密货币交易策略 压力测试方法"},
				ui: `[{"type":"choice_prompt","question":"确认 BTC 动量策略并开始压力测试？","options":[` +
					`{"id":"confirm","label":"确认并开始压力测试"},{"id":"revise","label":"修改规则"},{"id":"rerun_backtest","label":"换一个区间回测"}]}]`,
			},
		},
	}
}

// badPatch is a valid reply whose patch sets strategy_status to a value the phase does not
// know; the server must refuse the patch.
func badPatch() scenario {
	return scenario{
		phase: "strategy",
		replies: map[language]reply{
			english: {
				phases: []phase{
					{"Record the step", "Note in the session state where the strategy stands after this exchange."},
				},
				quote:   quoteEN,
				final:   "I have noted where we stand on **BTC momentum**. Tell me what you would like to do next: refine the rules, run the backtest, or confirm the strategy.\n",
				queries: []string{"trading strategy review checklist"},
				patch:   `{"strategy_status":"bogus"}`,
			},
			chinese: {
				phases: []phase{
					{"记录进展", "在会话状态中记下这次交流之后策略所处的阶段。"},
				},
				quote:   quoteZH,
				final:   "我已经记下了 **BTC 动量** 策略目前的进展。接下来你想做什么：完善规则、运行回测，还是确认策略？\n",
				queries: []string{"交易策略 检查清单"},
				patch:   `{"strategy_status":"bogus"}`,
			},
		},
	}
}

// genUINotAllowed is a valid reply carrying a deployment_summary card during the strategy
// phase; the server must drop the card.
func genUINotAllowed() scenario {
	return scenario{
		phase: "strategy",
		replies: map[language]reply{
			english: {
				phases: []phase{
					{"Look ahead", "The user asked how the strategy would go live; sketch the deployment without deploying anything."},
				},
				quote: quoteEN,
				final: "Here is how **BTC momentum** would be deployed later on: paper trading first, with a risk guard that stops it after a 3% loss in one day. " +
					"We are still designing the strategy, so nothing is deployed yet.\n",
				queries: []string{"paper trading before live crypto deployment"},
				ui:      `[{"type":"deployment_summary","target":"paper","risk_guard_status":"pending","limits":{"max_daily_loss":0.03}}]`,
			},
			chinese: {
				phases: []phase{
					{"展望部署", "用户问策略上线后会怎样；只描述部署方式，不做任何部署。"},
				},
				quote: quoteZH,
				final: "**BTC 动量** 策略以后会这样部署：先做模拟交易，并配置风控守卫，单日亏损达到 3% 时自动停止。" +
					"我们还在设计策略阶段，所以目前没有任何部署。\n",
				queries: []string{"加密货币策略 模拟交易 实盘部署"},
				ui:      `[{"type":"deployment_summary","target":"paper","risk_guard_status":"pending","limits":{"max_daily_loss":0.03}}]`,
			},
		},
	}
}
