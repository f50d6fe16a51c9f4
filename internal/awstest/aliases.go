package awstest

import "github.com/webhook-inbox/webhook-inbox/internal/emulators"

// The emulators' names, for tests that used them from here.
type (
	Server        = emulators.Server
	Capacity      = emulators.Capacity
	CapacityUnits = emulators.CapacityUnits
)

const (
	Region          = emulators.Region
	DynoxideVersion = emulators.DynoxideVersion
	KumoVersion     = emulators.KumoVersion
	Kumo            = emulators.Kumo
	Moto            = emulators.Moto
)

var (
	AWSEmulator     = emulators.AWSEmulator
	DynoxideBinary  = emulators.DynoxideBinary
	FreePort        = emulators.FreePort
	KeepRequestBody = emulators.KeepRequestBody
	KumoBinary      = emulators.KumoBinary
	Launch          = emulators.Launch
	LaunchAWS       = emulators.LaunchAWS
	LaunchDynoxide  = emulators.LaunchDynoxide
	LaunchKumo      = emulators.LaunchKumo
	ModuleRoot      = emulators.ModuleRoot
	MotoBinary      = emulators.MotoBinary
	Serial          = emulators.Serial
)
