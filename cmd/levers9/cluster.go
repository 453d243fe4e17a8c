package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

type queueRow struct {
	ID                 string      `json:"id"`
	Name               string      `json:"name"`
	Mode               string      `json:"mode"`
	MaxGpusPerJob      int         `json:"maxGpusPerJob"`
	MaxCPUPerJob       float64     `json:"maxCPUPerJob"`
	MaxMemoryMibPerJob int         `json:"maxMemoryMibPerJob"`
	StartFee           json.Number `json:"startFee"`
	CPUPrice           json.Number `json:"cpuPrice"`
	MemoryPrice        json.Number `json:"memoryPrice"`
	GpuPrices          []struct {
		Type      string      `json:"type"`
		PerMinute json.Number `json:"perMinute"`
	} `json:"gpuPrices"`
	Multiplier float64 `json:"multiplier"`
	Nodes      []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"nodes"`
}

// newQueuesCommand lists the queues: levers9 queues [--json].
func newQueuesCommand(a *app) *cobra.Command {
	return listingCommand(a, "queues", "queues, their limits and prices", printQueues)
}

func printQueues(ctx context.Context, c clientFlags, asJSON bool, stdout, stderr io.Writer) int {
	rows, err := listRows[queueRow](ctx, c, "queues", `{ queues(first: 1000, orderBy: {field: NAME, direction: ASC}) { edges { node {
  id name mode maxGpusPerJob maxCPUPerJob maxMemoryMibPerJob startFee cpuPrice memoryPrice
  gpuPrices { type perMinute } multiplier nodes { name status } } } } }`)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 queues:", err)
		return exitError
	}
	if asJSON {
		return printJSON(stdout, stderr, rows)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tMODE\tMAX GPUS\tMAX CPUS\tMAX MEMORY\tSTART FEE\tCPU/MIN\tGIB/MIN\tGPU/MIN\tNODES")
	for _, q := range rows {
		var gpus []string
		for _, g := range q.GpuPrices {
			gpus = append(gpus, g.Type+" "+g.PerMinute.String())
		}
		online := 0
		for _, n := range q.Nodes {
			if n.Status == "ONLINE" {
				online++
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%g\t%d MiB\t%s\t%s\t%s\t%s\t%d of %d online\n", q.Name, q.Mode, q.MaxGpusPerJob, q.MaxCPUPerJob,
			q.MaxMemoryMibPerJob, q.StartFee, q.CPUPrice, q.MemoryPrice, orDash(strings.Join(gpus, ", ")), online, len(q.Nodes))
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}

// gpuCount is a number of GPUs of one type, with their device IDs.
type gpuCount struct {
	Type    string   `json:"type"`
	Count   int      `json:"count"`
	Devices []string `json:"devices"`
}

// nodeResources are what services booked on a node, or what is free.
type nodeResources struct {
	CPU       float64    `json:"cpu"`
	MemoryMiB int        `json:"memoryMiB"`
	GPUs      []gpuCount `json:"gpus"`
}

type nodeRow struct {
	ID              string     `json:"id"`
	Name            string     `json:"name"`
	Status          string     `json:"status"`
	Drain           bool       `json:"drain"`
	Labels          []string   `json:"labels"`
	LastHeartbeatAt *time.Time `json:"lastHeartbeatAt"`
	AgentVersion    string     `json:"agentVersion"`
	Inventory       struct {
		CPUs      float64    `json:"cpus"`
		MemoryMiB int        `json:"memoryMiB"`
		GPUs      []gpuCount `json:"gpus"`
		Runtime   string     `json:"runtime"`
	} `json:"inventory"`
	Booked nodeResources `json:"booked"`
	Free   nodeResources `json:"free"`
	Queues []struct {
		Name string `json:"name"`
	} `json:"queues"`
}

// gpuSummary says per type how many GPUs are free of how many
// ("H100 1/2 free"), with the booked devices when known.
func (n nodeRow) gpuSummary() string {
	var out []string
	for _, g := range n.Inventory.GPUs {
		free, booked := 0, gpuCount{}
		for _, f := range n.Free.GPUs {
			if f.Type == g.Type {
				free = f.Count
			}
		}
		for _, b := range n.Booked.GPUs {
			if b.Type == g.Type {
				booked = b
			}
		}
		s := fmt.Sprintf("%s %d/%d free", g.Type, free, g.Count)
		if len(booked.Devices) > 0 {
			s += " (booked " + strings.Join(booked.Devices, ",") + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// newNodesCommand lists the nodes: levers9 nodes [--json].
func newNodesCommand(a *app) *cobra.Command {
	return listingCommand(a, "nodes", "nodes, their resources and state", printNodes)
}

func printNodes(ctx context.Context, c clientFlags, asJSON bool, stdout, stderr io.Writer) int {
	rows, err := listRows[nodeRow](ctx, c, "nodes", `{ nodes(first: 1000, orderBy: {field: NAME, direction: ASC}) { edges { node {
  id name status drain labels lastHeartbeatAt agentVersion inventory { cpus memoryMiB gpus { type count devices } runtime }
  booked { cpu memoryMiB gpus { type count devices } } free { cpu memoryMiB gpus { type count devices } }
  queues { name } } } } }`)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 nodes:", err)
		return exitError
	}
	if asJSON {
		return printJSON(stdout, stderr, rows)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSTATUS\tDRAIN\tRUNTIME\tCPUS FREE\tMEMORY FREE\tGPUS\tQUEUES\tLABELS\tLAST HEARTBEAT\tAGENT")
	for _, n := range rows {
		var queues []string
		for _, q := range n.Queues {
			queues = append(queues, q.Name)
		}
		drain := "-"
		if n.Drain {
			drain = "draining"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%g/%g\t%d/%d MiB\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.Status, drain, orDash(n.Inventory.Runtime),
			n.Free.CPU, n.Inventory.CPUs, n.Free.MemoryMiB, n.Inventory.MemoryMiB,
			orDash(n.gpuSummary()), orDash(strings.Join(queues, ", ")), orDash(strings.Join(n.Labels, ",")),
			timeOrDash(n.LastHeartbeatAt), orDash(n.AgentVersion))
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}

// newNodeCommand changes a node: levers9 node drain|undrain NAME. A
// draining node takes no new jobs; the jobs it runs finish. Tenant admins
// only.
func newNodeCommand(a *app) *cobra.Command {
	const usage = "usage: levers9 node drain|undrain NAME"
	verb := func(name, short string) *cobra.Command {
		cmd := &cobra.Command{Use: name + " NAME", Short: short, ValidArgsFunction: cobra.NoFileCompletions}
		cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
			if len(args) != 1 {
				fmt.Fprintln(a.stderr, usage)
				return exitUsage
			}
			return drainNode(cmd.Context(), c, args[0], name == "drain", a.stdout, a.stderr)
		})
		return client(cmd, false)
	}
	return groupCommand(a, "node", "stop (or resume) placing new jobs on a node", usage+"\n",
		verb("drain", "stop placing new jobs on a node; the jobs it runs finish"),
		verb("undrain", "place new jobs on a node again"))
}

// drainNode sets or clears the drain of the node called name.
func drainNode(ctx context.Context, c clientFlags, name string, drain bool, stdout, stderr io.Writer) int {
	verb := "undrain"
	if drain {
		verb = "drain"
	}
	id, err := c.idByName(ctx, "nodes", "node", name)
	if err != nil {
		fmt.Fprintf(stderr, "levers9 node %s: %v\n", verb, err)
		return exitError
	}
	var out map[string]any
	if err := c.query(ctx, `mutation($id: ID!, $d: Boolean!) { updateNode(id: $id, input: {drain: $d}) { id } }`,
		map[string]any{"id": id, "d": drain}, &out); err != nil {
		fmt.Fprintf(stderr, "levers9 node %s: %v\n", verb, err)
		return exitError
	}
	if drain {
		fmt.Fprintf(stdout, "Node %s is draining: it takes no new jobs; the jobs it runs finish.\n", name)
	} else {
		fmt.Fprintf(stdout, "Node %s takes new jobs again.\n", name)
	}
	return exitOK
}

// listingCommand is a listing command without arguments (levers9 NAME
// [--json]) printed by list.
func listingCommand(a *app, name, short string, list func(ctx context.Context, c clientFlags, asJSON bool, stdout, stderr io.Writer) int) *cobra.Command {
	cmd := &cobra.Command{Use: name + " [--json]", Short: short, ValidArgsFunction: cobra.NoFileCompletions}
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 0 {
			fmt.Fprintf(a.stderr, "usage: levers9 %s [--json]\n", name)
			return exitUsage
		}
		return list(cmd.Context(), c, a.json, a.stdout, a.stderr)
	})
	return client(cmd, true)
}
