package scheduling

// Texts of pending jobs that the scheduler writes itself, beside
// Reason.String's.
const (
	StartingPrefix = "starting on node "     // placed, until its node starts it
	InvalidPrefix  = "cannot be scheduled: " // no pass can place it
)

// A ReasonClass is a few fixed words for a kind of stored waiting reason,
// for counting pending jobs by why they wait (metrics) without a label
// per text. Like holds SQL LIKE patterns that match the class's texts;
// the texts are made here and in the scheduler from the constants above,
// and TestReasonClasses checks each text falls in its kind's class.
type ReasonClass struct {
	Label string
	Like  string
}

// ReasonClasses in the order to test them: the first that matches wins;
// a text that none matches is "other".
var ReasonClasses = []ReasonClass{
	{"starting", StartingPrefix + "%"},
	{ClassOf(NoNodes), "queue % has no online nodes%"},
	{ClassOf(PinnedAway), "waiting for node %"},
	{ClassOf(NoContainers), "waiting for a node that runs containers%"},
	{ClassOf(TooLarge), "no online node in queue % is large enough%"},
	{ClassOf(Waiting), "waiting for %"},
	{"invalid", InvalidPrefix + "%"},
}

// ClassOf is the class label of a reason kind.
func ClassOf(k ReasonKind) string {
	switch k {
	case NoNodes:
		return "no_nodes"
	case Waiting:
		return "capacity"
	case TooLarge:
		return "too_large"
	case PinnedAway:
		return "node_offline"
	case NoContainers:
		return "no_containers"
	}
	return "other"
}
