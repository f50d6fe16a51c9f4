package outbox

// Waiting is how many entries wait for a PutEvents request to carry them.
func (d *Deliverer) Waiting() int {
	d.batcher.mu.Lock()
	defer d.batcher.mu.Unlock()
	return len(d.batcher.queue)
}
