// Package scheduling decides where pending jobs run. It is pure: it sees
// nodes and jobs as values, touches no database and keeps no state, so the
// River worker, tests and benchmarks call the same functions.
//
// Policy:
//
//   - A job runs on exactly one node: its services are never split, and the
//     node needs free CPU, memory and GPUs for the sum of its services.
//   - Some nodes a job may never use: a job with an image runs only on
//     nodes that run containers (command-only jobs, and blueprints that
//     run as virtual environments (Service.Venv), run anywhere), and a
//     pinned job (it mounts a bucket on a node's own disk) only on its
//     node. A job waiting for these reasons says so.
//   - GPUs are booked by device: each GPU service gets the lowest free
//     devices of its type in inventory order, services in order. Devices
//     held without a known ID (booked before devices were) still count,
//     so a type's free GPUs are the fewer of its unbooked devices and its
//     capacity minus what is used.
//   - Fixed host ports are booked per node: a job needs all of its ports
//     free on its node, and one job never declares a port twice.
//   - A service's GPUTypes is a preference list. Services are assigned in
//     order, each to the earliest type for which the whole job still fits
//     (a search, so an early service never takes the only type a later one
//     accepts when another choice would do). Across nodes, preference wins
//     first: a job gets H100 wherever H100 is free before it settles for A100
//     on a tighter node, as a user listing H100 first would expect. The
//     search has budgets, so a hostile puzzle of a job costs bounded time
//     and at worst waits; it is never over-committed.
//   - Among equally preferred nodes, those holding more of the job's images
//     come first (Node.Images: services whose image the node holds, counted),
//     so a blueprint image is fetched through the server as rarely as can
//     be. Only after GPU preference: a user asking for H100 gets H100 even
//     where the image must be fetched first, which costs far less than a
//     run on the wrong GPU.
//   - Among nodes equal so far, best fit limits fragmentation: fewest
//     free GPUs of the chosen types left over, then fewest free GPUs of other
//     types (keeps GPU nodes for GPU jobs, an addition to the usual order),
//     then least free CPU, then least free memory, then the lower node ID.
//   - Schedule orders jobs by priority (higher first), then submit time, then
//     ID, and places them greedily with backfill: a job that does not fit
//     waits, and later, smaller jobs may still take what is free. This keeps
//     nodes busy; the price is that a large job can wait as long as small
//     ones keep arriving. Reservations against that starvation are future
//     work.
//   - Nothing is over-committed. CPU is counted in millicores (requests
//     rounded up, capacity down) so float sums cannot creep past capacity; a
//     node whose Used exceeds its Capacity simply has nothing free.
//
// Results depend only on the input values, never on the order of nodes or
// jobs in their slices.
package scheduling
