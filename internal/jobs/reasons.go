package jobs

// ReasonWaiting is a new job's reason until a scheduling pass looks at it.
const ReasonWaiting = "waiting to be scheduled"
