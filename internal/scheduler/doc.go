// Package scheduler is the database side of scheduling (internal/scheduling
// holds the pure rules and decides; this package reads and writes): it loads a
// queue's online nodes (runtime, GPU devices, what their services hold:
// resources, booked devices, host ports) and pending jobs (with the node a
// mounted node-storage bucket pins them to), lets the pure package
// scheduling decide, and stores the decisions (services' node, GPU type and
// booked devices, the reason each job waits) in one transaction.
//
// Replicas never over-commit a node, book a device or a port twice: on
// PostgreSQL a pass locks the rows of the nodes it places on (SELECT … FOR
// UPDATE, in ID order so passes over overlapping queues cannot deadlock)
// before it reads what they run, so a second pass touching one of those
// nodes reads only after the first has committed. That relies on READ COMMITTED, PostgreSQL's default, where
// each statement sees what was committed before it began. On SQLite the
// single writer connection with immediate transactions serialises passes
// already. Writes are conditional (a service still unplaced and pending, a
// job still pending): if another writer got there first, the pass rolls
// back with ErrRaced and its River job retries.
//
// The node locks also hold back writes to those node rows (heartbeats,
// status) for the length of a pass: about a second per 10,000 pending jobs.
package scheduler
