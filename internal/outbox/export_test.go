package outbox

// Waiting is how many entries wait for a PutEvents request to carry them.
func (d *Deliverer) Waiting() int {
	d.batcher.mu.Lock()
	defer d.batcher.mu.Unlock()
	n := 0
	for _, l := range d.batcher.lanes {
		n += len(l.queue)
	}
	return n
}

// WaitingBytes is, for each bus with entries waiting, their total size.
func (d *Deliverer) WaitingBytes() map[string]int {
	d.batcher.mu.Lock()
	defer d.batcher.mu.Unlock()
	sizes := map[string]int{}
	for bus, l := range d.batcher.lanes {
		for _, r := range l.queue {
			sizes[bus] += r.size
		}
	}
	return sizes
}

// Coming is how many entries the batcher counts on their way: 0 when no
// delivery is under way, or every batch would wait the linger.
func (d *Deliverer) Coming() int {
	d.batcher.mu.Lock()
	defer d.batcher.mu.Unlock()
	return d.batcher.coming
}
