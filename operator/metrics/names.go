package metrics

// The operator's metric names. Dashboards and alerts refer to these; a test
// in dashboards/ checks that every query names only metrics listed by All.
const (
	// Event metrics.
	RequestsTotal                = "kmaint_requests_total"                     // counter {source, pool, policy}
	AdmissionsTotal              = "kmaint_admissions_total"                   // counter {pool}
	DrainDurationSeconds         = "kmaint_drain_duration_seconds"             // histogram {pool}: admitted to drained
	DrainFailuresTotal           = "kmaint_drain_failures_total"               // counter {pool, reason}
	RebootDurationSeconds        = "kmaint_reboot_duration_seconds"            // histogram {pool}: approved to back Ready with a new boot
	RebootFailuresTotal          = "kmaint_reboot_failures_total"              // counter {pool, reason}
	MaintenancesCompletedTotal   = "kmaint_maintenances_completed_total"       // counter {pool, source, result}
	PolicyEvaluationsTotal       = "kmaint_policy_evaluations_total"           // counter {policy}
	PolicyEvaluationErrorsTotal  = "kmaint_policy_evaluation_errors_total"     // counter {policy, reason}
	PolicyEvaluationDurationSecs = "kmaint_policy_evaluation_duration_seconds" // histogram {policy}
	PolicyQueryValue             = "kmaint_policy_query_value"                 // gauge {policy, node}
	PoolOverBudgetEpisodesTotal  = "kmaint_pool_over_budget_episodes_total"    // counter {pool}: times the pool went over its budget
	MaintenancesPrunedTotal      = "kmaint_maintenances_pruned_total"          // counter: finished NodeMaintenances deleted by retention
	DrainRetriesTotal            = "kmaint_drain_retries_total"                // counter {pool}: drains timed out, to be tried again
	DrainsForcedTotal            = "kmaint_drains_forced_total"                // counter {pool}: drains timed out and forced
	DrainForcedPodsTotal         = "kmaint_drain_forced_pods_total"            // counter {pool}: pods deleted by forced drains
	HealthCheckFailuresTotal     = "kmaint_health_check_failures_total"        // counter {pool, check}: settling nodes found bad by a health check
	HookDurationSeconds          = "kmaint_hook_duration_seconds"              // histogram {pool, point, hook, result}: an attempt of a hook, begun to passed or failed
	HookFailuresTotal            = "kmaint_hook_failures_total"                // counter {pool, point, hook, reason}: attempts of hooks that failed
	SilencesMadeTotal            = "kmaint_silences_made_total"                // counter {alertmanager}: silences made for nodes in flight
	SilencesExpiredTotal         = "kmaint_silences_expired_total"             // counter {alertmanager}: silences kmaint expired when a node's maintenance ended
	SilencesRemovedTotal         = "kmaint_silences_removed_total"             // counter {alertmanager}: silences someone else expired while their node was in flight
	SilenceErrorsTotal           = "kmaint_silence_errors_total"               // counter {alertmanager, operation}: calls to Alertmanager that failed
	SilencesHeld                 = "kmaint_silences_held"                      // gauge {alertmanager}: silences kmaint holds now

	// State metrics, collected from the cache at scrape time.
	PoolNodes            = "kmaint_pool_nodes"             // gauge {pool}
	PoolReadyNodes       = "kmaint_pool_ready_nodes"       // gauge {pool}
	PoolUpdatedNodes     = "kmaint_pool_updated_nodes"     // gauge {pool}
	PoolUnavailableNodes = "kmaint_pool_unavailable_nodes" // gauge {pool}
	PoolMaxUnavailable   = "kmaint_pool_max_unavailable"   // gauge {pool}
	PoolDrainingNodes    = "kmaint_pool_draining_nodes"    // gauge {pool}
	PoolRebootingNodes   = "kmaint_pool_rebooting_nodes"   // gauge {pool}
	PoolDegradedNodes    = "kmaint_pool_degraded_nodes"    // gauge {pool}
	PoolPendingRequests  = "kmaint_pool_pending_requests"  // gauge {pool}
	PoolBlocked          = "kmaint_pool_blocked"           // gauge {pool, reason}: 1 while blocked, for that reason
	PoolWindowOpen       = "kmaint_pool_window_open"       // gauge {pool}: 1 while a window is open (or the pool has none)
	PoolPaused           = "kmaint_pool_paused"            // gauge {pool}
	PoolOverBudget       = "kmaint_pool_over_budget"       // gauge {pool}: 1 while more nodes count against the budget than it allows
	PoolOptedOutNodes    = "kmaint_pool_opted_out_nodes"   // gauge {pool}: waiting nodes held by an opt-out
	PoolHalted           = "kmaint_pool_halted"            // gauge {pool}: 1 while its health checks halt the pool (its Halted condition)
	PoolSettlingNodes    = "kmaint_pool_settling_nodes"    // gauge {pool}: nodes back from their reboot that hold their slot while they settle
	PoolHookNodes        = "kmaint_pool_hook_nodes"        // gauge {pool}: nodes waiting at one of the pool's hooks, or whose hook failed
	PoolFrozen           = "kmaint_pool_frozen"            // gauge {pool}: 1 while one of the pool's freezes is in force (or cannot be read)
	ClusterPaused        = "kmaint_cluster_paused"         // gauge: 1 while the MaintenanceGate named cluster stops every admission (paused or unreadable)

	PolicyCandidates     = "kmaint_policy_candidates"                        // gauge {policy, state}
	PolicyOpenRequests   = "kmaint_policy_open_requests"                     // gauge {policy}
	PolicyRequestsRaised = "kmaint_policy_requests_raised_total"             // counter {policy}, from status.requestsRaised
	PolicyThreshold      = "kmaint_policy_threshold"                         // gauge {policy}
	PolicyCondition      = "kmaint_policy_condition"                         // gauge {policy, condition}: 1 while the condition is True
	PolicyLastEvaluation = "kmaint_policy_last_evaluation_timestamp_seconds" // gauge {policy}

	UnreadableObjects = "kmaint_unreadable_objects" // gauge {kind}: objects whose stored body does not fit the API
	Maintenances      = "kmaint_maintenances"       // gauge {state}: NodeMaintenances kept, open, finished or unreadable

	// The daemon's, one set per node, each with a constant node label.
	DaemonRequestsTotal      = "kmaint_daemon_requests_total"          // counter {node, source}
	DaemonRebootsTotal       = "kmaint_daemon_reboots_total"           // counter {node}
	DaemonRefusedApprovals   = "kmaint_daemon_refused_approvals_total" // counter {node}: approvals no admission covered
	DaemonState              = "kmaint_daemon_state"                   // gauge {node, state}
	DaemonOutstandingRequest = "kmaint_daemon_outstanding_requests"    // gauge {node}
	DaemonBootTimeSeconds    = "kmaint_daemon_boot_time_seconds"       // gauge {node}: when the current boot began
	DaemonJournalVolatile    = "kmaint_daemon_journal_volatile"        // gauge {node}: 1 when the journal kept no earlier boot
	DaemonSentinelState      = "kmaint_daemon_sentinel_state"          // gauge {node, state}: 1 for what the reboot sentinel says

	// The Alertmanager webhook's.
	AlertWebhookRequestsTotal = "kmaint_alert_webhook_requests_total" // counter {code}

	// The notifier's (package notify), on the leader, when notifications are on.
	NotificationEventsTotal     = "kmaint_notification_events_total"            // counter {reason}: events taken for a message
	NotificationSummarizedTotal = "kmaint_notification_events_summarized_total" // counter: events only counted, past a message's lines
	NotificationMessagesTotal   = "kmaint_notification_messages_total"          // counter {receiver, result}: sent, failed or skipped
	NotificationReceivers       = "kmaint_notification_receivers"               // gauge {state}: configured URLs, valid or invalid
)

// All lists every metric kmaint exports, histograms by their base name.
func All() []string {
	return []string{
		RequestsTotal, AdmissionsTotal, DrainDurationSeconds, DrainFailuresTotal, RebootDurationSeconds,
		RebootFailuresTotal, MaintenancesCompletedTotal, PolicyEvaluationsTotal, PolicyEvaluationErrorsTotal,
		PolicyEvaluationDurationSecs, PolicyQueryValue, PoolOverBudgetEpisodesTotal, MaintenancesPrunedTotal,
		PoolNodes, PoolReadyNodes, PoolUpdatedNodes, PoolUnavailableNodes, PoolMaxUnavailable, PoolDrainingNodes,
		PoolRebootingNodes, PoolDegradedNodes, PoolPendingRequests, PoolBlocked, PoolWindowOpen, PoolPaused, PoolOverBudget,
		PoolOptedOutNodes, PoolFrozen, ClusterPaused, PoolHalted, PoolSettlingNodes, PoolHookNodes, HealthCheckFailuresTotal,
		PolicyCandidates, PolicyOpenRequests, PolicyRequestsRaised, PolicyThreshold, PolicyCondition, PolicyLastEvaluation,
		UnreadableObjects, Maintenances,
		DaemonRequestsTotal, DaemonRebootsTotal, DaemonState, DaemonOutstandingRequest, DaemonBootTimeSeconds,
		DaemonJournalVolatile, DaemonSentinelState, AlertWebhookRequestsTotal,
		DrainRetriesTotal, DrainsForcedTotal, DrainForcedPodsTotal, HookDurationSeconds, HookFailuresTotal,
		NotificationEventsTotal, NotificationSummarizedTotal, NotificationMessagesTotal, NotificationReceivers,
		SilencesMadeTotal, SilencesExpiredTotal, SilencesRemovedTotal, SilenceErrorsTotal, SilencesHeld,
	}
}
