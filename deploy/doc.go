// Package deploy holds what an operator deploys levers9 with: the
// container image (Dockerfile), systemd units (systemd/), a compose file
// for the server with PostgreSQL and MinIO (compose.yaml) and the Grafana
// dashboard (grafana/). It has no code: its tests build and run the image
// and check that the files name only flags and variables levers9 reads.
package deploy
