package jobs

import "fmt"

// Words of generated job names: short, common, harmless in any pairing.
var (
	nameAdjectives = []string{"amber", "brave", "bright", "calm", "clever", "crisp", "eager", "early", "fair", "fast",
		"gentle", "golden", "happy", "keen", "kind", "lively", "lucky", "merry", "misty", "noble",
		"plain", "proud", "quick", "quiet", "rapid", "silver", "sleek", "smooth", "snowy", "solid",
		"steady", "sunny", "swift", "tidy", "vivid", "warm", "wise", "witty", "young", "zesty"}
	nameNouns = []string{"badger", "beacon", "birch", "brook", "canyon", "cedar", "comet", "crane", "delta", "falcon",
		"fern", "finch", "fjord", "glacier", "harbor", "hawk", "heron", "island", "lagoon", "lynx",
		"maple", "meadow", "meteor", "orbit", "otter", "panda", "pebble", "pine", "prairie", "quartz",
		"raven", "reef", "river", "robin", "summit", "thistle", "tiger", "valley", "willow", "zephyr"}
)

// generatedName is a readable name for a job submitted without one
// ("quiet-heron-482"): people tell jobs apart in tables and messages by
// name, and an ID is not something anyone remembers. Names need not be
// unique (the ID is the identity); 1,600 pairs × 1,000 numbers make a
// repeat among recent jobs unlikely. intn is rand.IntN (tests pass their
// own).
func generatedName(intn func(int) int) string {
	return fmt.Sprintf("%s-%s-%03d", nameAdjectives[intn(len(nameAdjectives))], nameNouns[intn(len(nameNouns))], intn(1000))
}
