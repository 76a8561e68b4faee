package history

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/index"
)

// Client reads NodeMaintenances from the open cache its Client reads and
// from the History together, as one cache of them all would read; the rest
// it passes on. A list of NodeMaintenances may select by one of package
// index's fields, as the cache's lists do, and by nothing else.
//
// The open cache is read first, then the history: a record that leaves the
// open cache in between is waited for (History.await), and one in both
// reads as the history has it, the later of the two. APIReader reads
// from the API server a record that left the open cache and that the
// history's watches are slow to bring.
type Client struct {
	client.Client
	History   *History
	APIReader client.Reader
}

// get reads a NodeMaintenance from the API server.
func (c *Client) get(ctx context.Context, name string) (*v1alpha1.NodeMaintenance, error) {
	nm := &v1alpha1.NodeMaintenance{}
	if err := c.APIReader.Get(ctx, client.ObjectKey{Name: name}, nm); err != nil {
		return nil, err
	}
	return nm, nil
}

// Get reads a NodeMaintenance from the open cache and the history. Where
// both hold it, the history's is read: a record that finished may reach the
// history before the open cache lets it go.
func (c *Client) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	nm, ok := obj.(*v1alpha1.NodeMaintenance)
	if !ok {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	err := c.Client.Get(ctx, key, obj, opts...)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err == nil && !c.History.Synced() {
		// Read before the history is listed, as the open cache has it: it
		// is what the cache alone would say, and waiting for a year of
		// history would hold every reconcile of the operator's first
		// seconds.
		return nil
	}
	if err := c.History.WaitForSync(ctx); err != nil {
		return err
	}
	if err := c.History.await(ctx, func(name string, _ *leaving) bool { return name == key.Name }, c.get); err != nil {
		return err
	}
	if rec := c.History.Get(key.Name); rec != nil {
		rec.Into(nm)
		return nil
	}
	return err
}

// List adds the history's records to a list of NodeMaintenances.
func (c *Client) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	nms, ok := list.(*v1alpha1.NodeMaintenanceList)
	if !ok {
		return c.Client.List(ctx, list, opts...)
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	sel, err := selectionOf(lo)
	if err != nil {
		return err
	}
	if err := c.Client.List(ctx, nms, opts...); err != nil {
		return err
	}
	if err := c.History.WaitForSync(ctx); err != nil {
		return err
	}
	if sel.concerns != nil {
		if err := c.History.await(ctx, sel.concerns, c.get); err != nil {
			return err
		}
	}
	records := sel.records(c.History)
	if len(records) == 0 {
		return nil
	}
	at := make(map[string]int, len(nms.Items))
	for i := range nms.Items {
		at[nms.Items[i].Name] = i
	}
	// Room for every record at once: a NodeMaintenance is a kilobyte,
	// and a list grown one append at a time copied them all again at
	// every doubling.
	nms.Items = slices.Grow(nms.Items, len(records))
	for _, rec := range records {
		if i, ok := at[rec.Name]; ok {
			rec.Into(&nms.Items[i])
			continue
		}
		nms.Items = append(nms.Items, v1alpha1.NodeMaintenance{})
		rec.Into(&nms.Items[len(nms.Items)-1])
	}
	return nil
}

// selection is what a list reads of the history: its records, and which
// records that left the open cache concern it (nil: none).
type selection struct {
	records  func(*History) []*Record
	concerns func(name string, l *leaving) bool
}

// selectionOf returns what a list with lo reads of the history, or why the
// history cannot answer it.
func selectionOf(lo *client.ListOptions) (selection, error) {
	if lo.LabelSelector != nil && !lo.LabelSelector.Empty() || lo.Limit != 0 || lo.Continue != "" {
		return selection{}, fmt.Errorf("history: a list of NodeMaintenances selects by one indexed field or nothing, not %+v", lo)
	}
	if lo.FieldSelector == nil || lo.FieldSelector.Empty() {
		return selection{records: (*History).All, concerns: func(string, *leaving) bool { return true }}, nil
	}
	reqs := lo.FieldSelector.Requirements()
	if len(reqs) != 1 {
		return selection{}, fmt.Errorf("history: a list of NodeMaintenances selects by one field, not %q", lo.FieldSelector)
	}
	field, value := reqs[0].Field, reqs[0].Value
	if v, ok := lo.FieldSelector.RequiresExactMatch(field); !ok || v != value {
		return selection{}, fmt.Errorf("history: a list of NodeMaintenances selects a field by one value, not %q", lo.FieldSelector)
	}
	switch field {
	case index.NodeName:
		return selection{
			records:  func(h *History) []*Record { return readable(h.Node(value)) },
			concerns: func(_ string, l *leaving) bool { return l.node == value },
		}, nil
	case index.Policy:
		return selection{
			records: func(h *History) []*Record {
				var out []*Record
				for _, r := range h.All() {
					if r.Readable() && r.Policy() == value {
						out = append(out, r)
					}
				}
				return out
			},
			concerns: func(_ string, l *leaving) bool { return l.policy == value },
		}, nil
	case index.OpenOnNode:
		// Open records only, which the history never holds.
		return selection{records: func(*History) []*Record { return nil }}, nil
	case index.State:
		// No record leaves the open cache for another state than finished.
		switch value {
		case index.Open:
			return selection{records: func(*History) []*Record { return nil }}, nil
		case index.Unreadable:
			return selection{records: (*History).Unreadable}, nil
		case index.Finished:
			return selection{
				records:  func(h *History) []*Record { return readable(h.All()) },
				concerns: func(string, *leaving) bool { return true },
			}, nil
		}
	}
	return selection{}, fmt.Errorf("history: NodeMaintenances are not indexed by %s=%s", field, value)
}

// readable drops the records that cannot be read, which no node's index
// holds.
func readable(records []*Record) []*Record {
	out := records[:0]
	for _, r := range records {
		if r.Readable() {
			out = append(out, r)
		}
	}
	return out
}
