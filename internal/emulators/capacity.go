package emulators

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Capacity adds up the DynamoDB capacity a client's calls consume, as the
// server reports it: its Middleware asks every write, GetItem and Query
// for ReturnConsumedCapacity INDEXES (the total, and the indexes' share).
// Tests and the cost tool read it; no function uses it.
type Capacity struct {
	mu sync.Mutex
	u  CapacityUnits
}

// CapacityUnits is what a Capacity has counted.
type CapacityUnits struct {
	Write, Read float64
	// WriteBy is the write units by operation ("PutItem", "TransactWriteItems"…),
	// and IndexWriteBy the part of them the indexes consumed.
	WriteBy, IndexWriteBy map[string]float64
	// Transacted is when the last TransactWriteItems answered.
	Transacted time.Time
}

// Reset starts the count again.
func (c *Capacity) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.u = CapacityUnits{}
}

// Units returns the count so far.
func (c *Capacity) Units() CapacityUnits {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.u
	u.WriteBy = make(map[string]float64, len(c.u.WriteBy))
	for k, v := range c.u.WriteBy {
		u.WriteBy[k] = v
	}
	u.IndexWriteBy = make(map[string]float64, len(c.u.IndexWriteBy))
	for k, v := range c.u.IndexWriteBy {
		u.IndexWriteBy[k] = v
	}
	return u
}

func (c *Capacity) add(op string, write bool, cc ...types.ConsumedCapacity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.u.WriteBy == nil {
		c.u.WriteBy, c.u.IndexWriteBy = map[string]float64{}, map[string]float64{}
	}
	for _, u := range cc {
		var n float64
		switch {
		case write && u.WriteCapacityUnits != nil:
			n = *u.WriteCapacityUnits
		case !write && u.ReadCapacityUnits != nil:
			n = *u.ReadCapacityUnits
		case u.CapacityUnits != nil:
			n = *u.CapacityUnits
		}
		if write {
			c.u.Write += n
			c.u.WriteBy[op] += n
			for _, g := range u.GlobalSecondaryIndexes {
				switch {
				case g.WriteCapacityUnits != nil:
					c.u.IndexWriteBy[op] += *g.WriteCapacityUnits
				case g.CapacityUnits != nil:
					c.u.IndexWriteBy[op] += *g.CapacityUnits
				}
			}
		} else {
			c.u.Read += n
		}
	}
	if op == "TransactWriteItems" {
		c.u.Transacted = time.Now()
	}
}

// Middleware is the client option (aws.Config.APIOptions) that counts.
func (c *Capacity) Middleware(s *middleware.Stack) error {
	return s.Initialize.Add(middleware.InitializeMiddlewareFunc("capacity",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			total := types.ReturnConsumedCapacityIndexes
			switch p := in.Parameters.(type) {
			case *dynamodb.PutItemInput:
				p.ReturnConsumedCapacity = total
			case *dynamodb.UpdateItemInput:
				p.ReturnConsumedCapacity = total
			case *dynamodb.TransactWriteItemsInput:
				p.ReturnConsumedCapacity = total
			case *dynamodb.GetItemInput:
				p.ReturnConsumedCapacity = total
			case *dynamodb.QueryInput:
				p.ReturnConsumedCapacity = total
			}
			out, md, err := next.HandleInitialize(ctx, in)
			op := middleware.GetOperationName(ctx)
			one := func(cc *types.ConsumedCapacity) []types.ConsumedCapacity {
				if cc == nil {
					return nil
				}
				return []types.ConsumedCapacity{*cc}
			}
			switch r := out.Result.(type) {
			case *dynamodb.PutItemOutput:
				c.add(op, true, one(r.ConsumedCapacity)...)
			case *dynamodb.UpdateItemOutput:
				c.add(op, true, one(r.ConsumedCapacity)...)
			case *dynamodb.TransactWriteItemsOutput:
				c.add(op, true, r.ConsumedCapacity...)
			case *dynamodb.GetItemOutput:
				c.add(op, false, one(r.ConsumedCapacity)...)
			case *dynamodb.QueryOutput:
				c.add(op, false, one(r.ConsumedCapacity)...)
			}
			return out, md, err
		}), middleware.After)
}
