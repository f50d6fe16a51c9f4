package deploy

// Matrix is the parameter sets `make lint` lints the template with, each
// beside the template's defaults: together they take every condition both
// ways (forwarding off, to the default bus and to the stack's own, with and
// without an archive and the example queue; metrics on and off, an alarm
// topic or none; the test events' three settings) and the numeric
// parameters to their extremes.
var Matrix = []map[string]string{
	{},
	{"ForwardBus": "create", "Forward": `[{"source":"stripe","types":["invoice.*"]}]`, "ForwardArchiveDays": "0", "ForwardExampleQueue": "true"},
	{"ForwardBus": "create", "Forward": `[{"source":"stripe"}]`, "ForwardArchiveDays": "3650"},
	{"ForwardBus": "default", "Forward": `[{"source":"stripe"}]`, "ForwardExampleQueue": "true"},
	{"MetricsNamespace": "", "ShareableTestEvents": "off"},
	{"ShareableTestEvents": "registry-exists", "AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:pages"},
	{"RetryBaseSeconds": "43200", "RetryCapSeconds": "43200", "MaxReceiveCount": "1000", "SweepSchedule": "rate(1 minute)", "SweepAfterSeconds": "86400"},
	{"RetryBaseSeconds": "1", "RetryCapSeconds": "1", "MaxReceiveCount": "2", "SweepAfterSeconds": "1", "PreviousSecretWindowSeconds": "0"},
	// A base over its cap: the template cannot refuse it (its rules do not
	// compare numbers), so every function must start with it.
	{"RetryBaseSeconds": "43200", "RetryCapSeconds": "1"},
	{"ProcessorBatchSize": "10000", "ProcessorMaxConcurrency": "1000", "ProcessorConcurrency": "100", "MaxBodyBytes": "6291456", "PayloadRetentionDays": "3650", "LogRetentionDays": "3653"},
	{"ProcessorBatchSize": "1", "ProcessorMaxConcurrency": "2", "ProcessorConcurrency": "1", "MaxBodyBytes": "1", "PayloadRetentionDays": "1", "LogRetentionDays": "1", "LogLevel": "debug",
		"Targets": `[{"name":"receipt","url":"https://receipts.example.com/hook","retry_unknown":true,"timeout_seconds":15}]`, "IngestErrorRateAlarmPercent": "0", "DeadRateAlarmPercent": "100", "OldestUnfinishedAlarmSeconds": "60"},
}
