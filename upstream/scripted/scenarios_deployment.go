package scripted

// Fixtures of the deployment phase: prepare (arm the risk guard), rollout (deploy to paper
// trading) and monitor, ending completed or blocked by the risk guard.

// monitorArgs are the check_risk_guard arguments of the monitor stage.
const monitorArgs = `{"deployment_id":"{deployment_id}"}`

// deploymentScenarios returns the scenarios of the deployment phase.
func deploymentScenarios() map[string]scenario {
	return map[string]scenario{
		"deploy_prepare":           deployPrepare(),
		"deploy_rollout":           deployRollout(),
		"deploy_monitor_completed": deployMonitorCompleted(),
		"deploy_monitor_blocked":   deployMonitorBlocked(),
	}
}

// deployPrepare picks paper trading and arms the risk guard.
func deployPrepare() scenario {
	return scenario{
		phase: "deployment",
		calls: []toolCall{
			{server: serverDeployer, name: "check_risk_guard",
				arguments: `{"target":"paper","max_position":0.1,"max_daily_loss":0.03}`,
				output:    `{"status":"armed","target":"paper","limits":{"max_position":0.1,"max_daily_loss":0.03}}`},
		},
		replies: map[language]reply{
			english: {
				phases: []phase{
					{"Choose the target", "Start on paper trading: real market data, no real money, until the strategy has a live track record."},
					{"Arm the risk guard", "Called check_risk_guard on deployer with a 10% position cap and a 3% daily loss limit; the guard is armed."},
				},
				quote: quoteEN,
				final: "The deployment is prepared:\n\n" +
					"- **Target:** paper trading, so no real money is at risk yet.\n" +
					"- **Risk guard:** armed. It caps a position at 10% of capital and stops the strategy after a 3% loss in one day.\n\n" +
					"Shall I roll it out?\n",
				queries: []string{"paper trading risk limits daily loss cap"},
				ui:      `[{"type":"deployment_summary","target":"paper","risk_guard_status":"armed","limits":{"max_position":0.1,"max_daily_loss":0.03}}]`,
				patch:   `{"deployment_target":"paper","risk_guard_status":"armed"}`,
			},
			chinese: {
				phases: []phase{
					{"选择部署目标", "先做模拟交易：使用真实行情，不动用真实资金，直到策略有了实盘记录。"},
					{"启用风控守卫", "在 deployer 上调用 check_risk_guard，设定单笔仓位上限 10%、单日亏损上限 3%；风控守卫已启用。"},
				},
				quote: quoteZH,
				final: "部署已准备就绪：\n\n" +
					"- **目标：** 模拟交易，暂时不涉及真实资金。\n" +
					"- **风控守卫：** 已启用。单笔仓位不超过资金的 10%，单日亏损达到 3% 时停止策略。\n\n" +
					"要开始上线吗？\n",
				queries: []string{"模拟交易 风控 单日亏损上限"},
				ui:      `[{"type":"deployment_summary","target":"paper","risk_guard_status":"armed","limits":{"max_position":0.1,"max_daily_loss":0.03}}]`,
				patch:   `{"deployment_target":"paper","risk_guard_status":"armed"}`,
			},
		},
	}
}

// deployRollout deploys the strategy to paper trading.
func deployRollout() scenario {
	return scenario{
		phase: "deployment",
		calls: []toolCall{
			{server: serverDeployer, name: "deploy_strategy", arguments: `{"target":"paper"}`,
				output: `{"deployment_id":"dep-{id}","target":"paper","status":"deployed"}`},
		},
		replies: map[language]reply{
			english: {
				phases: []phase{
					{"Roll out", "Called deploy_strategy on deployer with target paper; it returned deployment dep-{id}."},
					{"Check the result", "The deployment is live and subscribed to BTC-USD 4-hour candles; the risk guard sees every order."},
				},
				quote: quoteEN,
				final: "**BTC momentum** is live on paper trading as deployment `dep-{id}`. " +
					"The rollout finished: the strategy follows BTC-USD 4-hour candles and the risk guard checks every order. " +
					"Come back in a few days and I will report on the first trades.\n",
				queries: []string{"monitoring a paper trading deployment"},
				ui: `[{"type":"rollout_status","deployment_id":"dep-{id}","rollout_status":"done","steps":[` +
					`{"name":"Package the strategy","status":"done"},{"name":"Subscribe to market data","status":"done"},{"name":"Start paper trading","status":"done"}]}]`,
				patch: `{"rollout_status":"done","deployment_id":"dep-{id}","deployment_status":"deployed"}`,
			},
			chinese: {
				phases: []phase{
					{"上线", "在 deployer 上调用 deploy_strategy，目标为模拟交易；返回的部署编号是 dep-{id}。"},
					{"检查结果", "部署已运行，并订阅了 BTC-USD 4小时K线；风控守卫会检查每一笔订单。"},
				},
				quote: quoteZH,
				final: "**BTC 动量** 策略已在模拟交易中上线，部署编号 `dep-{id}`。" +
					"上线流程已完成：策略跟踪 BTC-USD 4小时K线，风控守卫检查每一笔订单。" +
					"过几天再来看看，我会汇报最初几笔交易的情况。\n",
				queries: []string{"模拟交易部署 监控方法"},
				ui: `[{"type":"rollout_status","deployment_id":"dep-{id}","rollout_status":"done","steps":[` +
					`{"name":"打包策略","status":"done"},{"name":"订阅行情","status":"done"},{"name":"开始模拟交易","status":"done"}]}]`,
				patch: `{"rollout_status":"done","deployment_id":"dep-{id}","deployment_status":"deployed"}`,
			},
		},
	}
}

// deployMonitorCompleted finds the deployment healthy and completes it.
func deployMonitorCompleted() scenario {
	return scenario{
		phase: "deployment",
		calls: []toolCall{
			{server: serverDeployer, name: "check_risk_guard", arguments: monitorArgs,
				output: `{"status":"armed","deployment_id":"{deployment_id}","breaches":[],"trades":6,"pnl":0.021}`},
		},
		replies: map[language]reply{
			english: {
				phases: []phase{
					{"Check the deployment", "Called check_risk_guard on deployer for {deployment_id}: six trades, +2.1%, no limit breached."},
					{"Conclude", "The deployment runs as planned, so the deployment phase is complete."},
				},
				quote: quoteEN,
				final: "Monitoring report for `{deployment_id}`: six paper trades so far, +2.1% in total, and no risk limit was touched. " +
					"The deployment runs as planned, so I am marking it as completed. Moving to real money is a separate decision you can take at any time.\n",
				queries: []string{"when to move from paper trading to live trading"},
				ui:      `[{"type":"deployment_summary","deployment_id":"{deployment_id}","target":"paper","deployment_status":"completed","trades":6,"pnl":0.021,"breaches":0}]`,
				patch:   `{"deployment_status":"completed"}`,
			},
			chinese: {
				phases: []phase{
					{"检查部署", "在 deployer 上对 {deployment_id} 调用 check_risk_guard：六笔交易，收益 +2.1%，没有触发任何限额。"},
					{"得出结论", "部署按计划运行，部署阶段完成。"},
				},
				quote: quoteZH,
				final: "`{deployment_id}` 的监控报告：目前共有六笔模拟交易，累计收益 +2.1%，没有触及任何风控限额。" +
					"部署按计划运行，我把它标记为已完成。是否转为真实资金交易，你可以随时另行决定。\n",
				queries: []string{"模拟交易 何时转为实盘"},
				ui:      `[{"type":"deployment_summary","deployment_id":"{deployment_id}","target":"paper","deployment_status":"completed","trades":6,"pnl":0.021,"breaches":0}]`,
				patch:   `{"deployment_status":"completed"}`,
			},
		},
	}
}

// deployMonitorBlocked finds the daily loss limit breached: the deployment is blocked.
func deployMonitorBlocked() scenario {
	return scenario{
		phase: "deployment",
		calls: []toolCall{
			{server: serverDeployer, name: "check_risk_guard", arguments: monitorArgs,
				output: `{"status":"tripped","deployment_id":"{deployment_id}","breaches":[{"limit":"max_daily_loss","value":0.041,"limit_value":0.03}]}`},
		},
		replies: map[language]reply{
			english: {
				phases: []phase{
					{"Check the deployment", "Called check_risk_guard on deployer for {deployment_id}: the guard tripped, with a 4.1% loss today against a 3% limit."},
					{"Conclude", "The deployment is blocked by the risk limit; the fix belongs in the strategy, so suggest going back to it."},
				},
				quote: quoteEN,
				final: "The risk guard stopped `{deployment_id}`: today's loss reached 4.1%, above the 3% daily limit, so the deployment is blocked.\n\n" +
					"Entries in a falling market cost more than the backtest suggested. I suggest we return to the strategy and add a trend filter before trying again.\n",
				queries: []string{"trend filter for momentum strategy in falling markets"},
				ui:      `[{"type":"deployment_summary","deployment_id":"{deployment_id}","target":"paper","deployment_status":"blocked","blocker_code":"risk_limit_exceeded","breach":{"limit":"max_daily_loss","value":0.041,"limit_value":0.03}}]`,
				patch:   `{"deployment_status":"blocked","blocker_code":"risk_limit_exceeded"}`,
			},
			chinese: {
				phases: []phase{
					{"检查部署", "在 deployer 上对 {deployment_id} 调用 check_risk_guard：风控守卫已触发，今日亏损 4.1%，超过 3% 的上限。"},
					{"得出结论", "部署因风控限额被阻止；问题需要在策略中解决，所以建议回到策略阶段。"},
				},
				quote: quoteZH,
				final: "风控守卫停止了 `{deployment_id}`：今日亏损达到 4.1%，超过 3% 的单日上限，部署已被阻止。\n\n" +
					"在下跌行情中开仓的代价比回测显示的更高。我建议回到策略阶段，先加入趋势过滤条件，再重新尝试。\n",
				queries: []string{"动量策略 下跌行情 趋势过滤"},
				ui:      `[{"type":"deployment_summary","deployment_id":"{deployment_id}","target":"paper","deployment_status":"blocked","blocker_code":"risk_limit_exceeded","breach":{"limit":"max_daily_loss","value":0.041,"limit_value":0.03}}]`,
				patch:   `{"deployment_status":"blocked","blocker_code":"risk_limit_exceeded"}`,
			},
		},
	}
}
