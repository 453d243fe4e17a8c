package runtime

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/levers9/levers9/internal/wire"
)

// records is Root/.running, what a later runtime on the root must clean up
// after this one: per job whose working directory exists, its ID, and per
// running service of it, the service's supervisor (its pid, its start time
// and the command's process group). The runtime keeps the file open and
// writes a job's slot in place: a job costs no file created or deleted
// (on this VM's ext4 a file's create and delete take about 70 µs, a
// folder's twice that; a job made a folder here and a file per service).
// Slots are fixed: a job's ID, then one record per service by its index in
// the job, zeros where there is none.
type records struct {
	f *os.File

	mu   sync.Mutex
	used []bool // by slot
}

const (
	recordsName = ".running"
	// slotHeader holds a job's ID (wire IDs are at most 128 bytes).
	slotHeader = 256
	// recordSize holds "NAME PID START PGID" (a name is at most 63 bytes).
	recordSize = 128
	slotSize   = slotHeader + wire.MaxServices*recordSize
)

// zeros clears records (written, never changed).
var zeros [slotSize]byte

// openRecords creates the records file at path, empty.
func openRecords(path string) (*records, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	return &records{f: f}, nil
}

// take gives job jobID the lowest free slot, written with its ID alone.
func (r *records) take(jobID string) (int, error) {
	if len(jobID) >= slotHeader {
		return 0, fmt.Errorf("job ID of %d bytes", len(jobID))
	}
	r.mu.Lock()
	slot := 0
	for slot < len(r.used) && r.used[slot] {
		slot++
	}
	if slot == len(r.used) {
		r.used = append(r.used, true)
	}
	r.used[slot] = true
	r.mu.Unlock()
	// The header alone: a free slot is zeros (the file starts empty, and
	// release clears what its last job wrote).
	buf := make([]byte, slotHeader)
	copy(buf, jobID)
	if err := r.write(buf, slot, 0); err != nil {
		r.free(slot)
		return 0, err
	}
	return slot, nil
}

// release clears slot, whose job has services records, and frees it. A
// slot that could not be cleared stays taken: no later job may be named
// with its last job's supervisors.
func (r *records) release(slot, services int) error {
	if err := r.write(zeros[:slotHeader+services*recordSize], slot, 0); err != nil {
		return err
	}
	r.free(slot)
	return nil
}

func (r *records) free(slot int) {
	r.mu.Lock()
	r.used[slot] = false
	r.mu.Unlock()
}

// service records the supervisor of service number index of slot's job,
// which started at started (supervise.ProcessStart), and the command's
// process group.
func (r *records) service(slot, index int, name string, pid int, started uint64, pgid int) error {
	line := fmt.Appendf(nil, "%s %d %d %d", name, pid, started, pgid)
	if len(line) > recordSize {
		return fmt.Errorf("record of service %s: %d bytes", name, len(line))
	}
	return r.write(line, slot, slotHeader+index*recordSize)
}

// clearService clears the record of service number index of slot's job:
// its processes are gone, and its supervisor may run another job's.
func (r *records) clearService(slot, index int) error {
	return r.write(zeros[:recordSize], slot, slotHeader+index*recordSize)
}

func (r *records) write(b []byte, slot, at int) error {
	if _, err := r.f.WriteAt(b, int64(slot)*slotSize+int64(at)); err != nil {
		return fmt.Errorf("writing %s: %w", recordsName, err)
	}
	return nil
}

func (r *records) close() error { return r.f.Close() }

// leftJob is a job a records file names, with its services' records.
type leftJob struct {
	id       string
	services []leftService
}

// leftService is a record: the supervisor of a service.
type leftService struct {
	name      string
	pid, pgid int
	started   uint64
}

// readRecords reads the jobs of a records file; a slot or record that does
// not parse is skipped (its job's directory is then left, never guessed).
func readRecords(b []byte) []leftJob {
	var jobs []leftJob
	for start := 0; start < len(b); start += slotSize {
		slot := b[start:min(start+slotSize, len(b))]
		id := string(bytes.TrimRight(slot[:min(slotHeader, len(slot))], "\x00"))
		if id == "" {
			continue
		}
		j := leftJob{id: id}
		for at := slotHeader; at < len(slot); at += recordSize {
			rec := bytes.TrimRight(slot[at:min(at+recordSize, len(slot))], "\x00")
			if len(rec) == 0 {
				continue
			}
			if s, ok := parseRecord(string(rec)); ok {
				j.services = append(j.services, s)
			}
		}
		jobs = append(jobs, j)
	}
	return jobs
}

func parseRecord(rec string) (leftService, bool) {
	f := strings.Fields(rec)
	if len(f) != 4 {
		return leftService{}, false
	}
	pid, err1 := strconv.Atoi(f[1])
	started, err2 := strconv.ParseUint(f[2], 10, 64)
	pgid, err3 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || err3 != nil || pid <= 1 {
		return leftService{}, false
	}
	return leftService{name: f[0], pid: pid, started: started, pgid: pgid}, true
}
