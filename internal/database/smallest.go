package database

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
)

// fillSmallestRequests gives pending jobs submitted before jobs had
// smallest_cpu and smallest_memory_mib (submission sets them) the least
// request of their services. Until then they read as asking for nothing,
// which never strands a job (a pass only reads on) but keeps a backlogged
// queue's passes reading every page. A job whose services all ask for
// nothing is left as it is, so a later start finds nothing to do.
func (db *DB) fillSmallestRequests(ctx context.Context) error {
	least := func(column string) string {
		return fmt.Sprintf("(SELECT min(s.%s) FROM %s s WHERE s.%s = %s.%s)", column, service.Table, service.FieldJobID, job.Table, job.FieldID)
	}
	q := fmt.Sprintf(`UPDATE %[1]s SET %[2]s = %[4]s, %[3]s = %[5]s
		WHERE %[6]s = '%[7]s' AND %[2]s = 0 AND %[3]s = 0
		AND EXISTS (SELECT 1 FROM %[8]s s WHERE s.%[9]s = %[1]s.%[10]s AND (s.%[11]s > 0 OR s.%[12]s > 0))`,
		job.Table, job.FieldSmallestCPU, job.FieldSmallestMemoryMib,
		least(service.FieldCPU), least(service.FieldMemoryMib),
		job.FieldStatus, job.StatusPending,
		service.Table, service.FieldJobID, job.FieldID, service.FieldCPU, service.FieldMemoryMib)
	res, err := db.SQL.ExecContext(ctx, q)
	if err != nil {
		return fmt.Errorf("filling the smallest requests of pending jobs: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		db.log.Info("filled the smallest requests of pending jobs", "jobs", n)
	}
	return nil
}
