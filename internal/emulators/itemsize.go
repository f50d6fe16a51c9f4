package emulators

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize is an item's size as DynamoDB bills it: each attribute's name
// and value, in bytes (a number: its significant digits halved, plus
// one; a list or map: 3 bytes and a byte an element, with its name). The
// cost tool and the store's tests read it; no function uses it.
func ItemSize(av map[string]types.AttributeValue) int {
	n := 0
	for name, v := range av {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(strings.TrimLeft(v.Value, "-0"))+1)/2 + 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 1
}
