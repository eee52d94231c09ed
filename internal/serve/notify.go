package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Provider names the shape of a notification, detected from its body.
type Provider string

// The notification shapes serve reads.
const (
	// Tigris object notifications: {"events":[{"eventName":
	// "OBJECT_CREATED_PUT","bucket":"...","object":{"key":"..."}}]}, keys
	// as they are.
	Tigris Provider = "tigris"
	// MinIO's webhook target: {"EventName":"s3:ObjectCreated:Put",
	// "Key":"bucket/key","Records":[...]}, records in the S3 event format.
	MinIO Provider = "minio"
	// AWS S3 event records ({"Records":[...]}, keys URL-encoded with "+"
	// for a space), as an SNS or SQS relay delivers them, an SNS
	// notification wrapping them, or an EventBridge event (detail-type
	// "Object Created", keys as they are) from an API destination.
	AWS Provider = "aws"
)

// Event is one object notification.
type Event struct {
	Provider Provider
	Name     string // the provider's event name, e.g. OBJECT_CREATED_PUT, ObjectCreated:Put
	// Created is set for an object created (or overwritten); deletes and
	// other events are ignored.
	Created bool
	Bucket  string
	Key     string    // the object key in the bucket, decoded
	Size    int64     // bytes, 0 when not given
	Time    time.Time // when the event happened, zero when not given
}

// Notification is one request body, parsed.
type Notification struct {
	Provider Provider
	Events   []Event
	// SubscribeURL is set for an SNS subscription confirmation: opening it
	// confirms the subscription (serve logs it; it never fetches it).
	SubscribeURL string
}

// ErrUnknownShape is returned for a JSON body that is none of the shapes
// serve reads.
var ErrUnknownShape = errors.New("not a Tigris, MinIO or AWS S3 object notification")

// s3Record is one record of the S3 event message structure (AWS S3 user
// guide, "Event message structure"), which MinIO also sends.
type s3Record struct {
	EventSource string `json:"eventSource"`
	EventName   string `json:"eventName"`
	EventTime   string `json:"eventTime"`
	S3          struct {
		Bucket struct {
			Name string `json:"name"`
		} `json:"bucket"`
		Object struct {
			Key  string `json:"key"`
			Size int64  `json:"size"`
		} `json:"object"`
	} `json:"s3"`
}

// tigrisEvent is one event of a Tigris notification (Tigris docs, "Object
// Notifications", notification format).
type tigrisEvent struct {
	EventName string `json:"eventName"`
	EventTime string `json:"eventTime"`
	Bucket    string `json:"bucket"`
	Object    struct {
		Key  string `json:"key"`
		Size int64  `json:"size"`
	} `json:"object"`
}

// eventBridge is an S3 event as Amazon EventBridge delivers it (AWS S3 user
// guide, "EventBridge event message structure").
type eventBridge struct {
	DetailType string `json:"detail-type"`
	Source     string `json:"source"`
	Time       string `json:"time"`
	Detail     struct {
		Bucket struct {
			Name string `json:"name"`
		} `json:"bucket"`
		Object struct {
			Key  string `json:"key"`
			Size int64  `json:"size"`
		} `json:"object"`
	} `json:"detail"`
}

// snsMessage is an Amazon SNS HTTP(S) delivery: a notification whose
// Message is the S3 event JSON, or a subscription confirmation.
type snsMessage struct {
	Type         string `json:"Type"`
	Message      string `json:"Message"`
	SubscribeURL string `json:"SubscribeURL"`
}

// ParseNotification reads a request body in any of the shapes of Provider,
// detected by its top-level fields. A body with no event (AWS's
// s3:TestEvent, an SNS confirmation) is not an error.
//
// Errors: the body is not JSON, or ErrUnknownShape.
func ParseNotification(body []byte) (*Notification, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	n := &Notification{}
	switch {
	case top["events"] != nil:
		n.Provider = Tigris
		var evs []tigrisEvent
		if err := json.Unmarshal(top["events"], &evs); err != nil {
			return nil, fmt.Errorf("tigris events: %w", err)
		}
		for _, e := range evs {
			n.Events = append(n.Events, Event{Provider: Tigris, Name: e.EventName,
				Created: strings.HasPrefix(e.EventName, "OBJECT_CREATED"),
				Bucket:  e.Bucket, Key: e.Object.Key, Size: e.Object.Size, Time: parseTime(e.EventTime)})
		}
	case top["Records"] != nil:
		var recs []s3Record
		if err := json.Unmarshal(top["Records"], &recs); err != nil {
			return nil, fmt.Errorf("records: %w", err)
		}
		n.Provider = AWS
		if top["EventName"] != nil || (len(recs) > 0 && strings.HasPrefix(recs[0].EventSource, "minio")) {
			n.Provider = MinIO
		}
		for _, r := range recs {
			n.Events = append(n.Events, Event{Provider: n.Provider, Name: r.EventName,
				Created: strings.Contains(r.EventName, "ObjectCreated"),
				Bucket:  r.S3.Bucket.Name, Key: decodeKey(r.S3.Object.Key), Size: r.S3.Object.Size,
				Time: parseTime(r.EventTime)})
		}
	case top["detail-type"] != nil && top["detail"] != nil:
		var e eventBridge
		if err := json.Unmarshal(body, &e); err != nil {
			return nil, fmt.Errorf("eventbridge event: %w", err)
		}
		n.Provider = AWS
		n.Events = append(n.Events, Event{Provider: AWS, Name: e.DetailType,
			Created: e.Source == "aws.s3" && e.DetailType == "Object Created",
			Bucket:  e.Detail.Bucket.Name, Key: e.Detail.Object.Key, Size: e.Detail.Object.Size, Time: parseTime(e.Time)})
	case top["Type"] != nil && top["TopicArn"] != nil:
		var m snsMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("sns message: %w", err)
		}
		switch m.Type {
		case "SubscriptionConfirmation":
			return &Notification{Provider: AWS, SubscribeURL: m.SubscribeURL}, nil
		case "Notification":
			inner, err := ParseNotification([]byte(m.Message))
			if err != nil {
				return nil, fmt.Errorf("sns notification: %w", err)
			}
			return inner, nil
		}
		return &Notification{Provider: AWS}, nil // UnsubscribeConfirmation
	case isTestEvent(top):
		n.Provider = AWS
	default:
		return nil, ErrUnknownShape
	}
	return n, nil
}

// isTestEvent recognises the s3:TestEvent that S3 sends when notifications
// are configured.
func isTestEvent(top map[string]json.RawMessage) bool {
	var name string
	return top["Event"] != nil && json.Unmarshal(top["Event"], &name) == nil && name == "s3:TestEvent"
}

// decodeKey decodes a key of the S3 event format: URL-encoded, "+" for a
// space. A key that does not decode is taken as it is (the sweep loads the
// file if that is not its key).
func decodeKey(k string) string {
	if d, err := url.QueryUnescape(k); err == nil {
		return d
	}
	return k
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
