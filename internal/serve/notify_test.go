package serve

import (
	"errors"
	"testing"
	"time"
)

func TestParseNotification(t *testing.T) {
	at := time.Date(2026, 1, 5, 10, 0, 3, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		body     string
		provider Provider
		want     []Event
		url      string
	}{
		{"tigris, several events", `{"events":[
			{"eventVersion":"1","eventSource":"tigris","eventName":"OBJECT_CREATED_PUT","eventTime":"2026-01-05T10:00:03Z","bucket":"landing","object":{"key":"gw/a b.csv","size":12,"eTag":"\"x\""}},
			{"eventVersion":"1","eventSource":"tigris","eventName":"OBJECT_DELETED","eventTime":"2026-01-05T10:00:03Z","bucket":"landing","object":{"key":"gw/old.csv"}}]}`,
			Tigris, []Event{
				{Provider: Tigris, Name: "OBJECT_CREATED_PUT", Created: true, Bucket: "landing", Key: "gw/a b.csv", Size: 12, Time: at},
				{Provider: Tigris, Name: "OBJECT_DELETED", Bucket: "landing", Key: "gw/old.csv", Time: at},
			}, ""},
		{"minio webhook", `{"EventName":"s3:ObjectCreated:Put","Key":"landing/gw/a b.csv","Records":[{"eventVersion":"2.0","eventSource":"minio:s3","awsRegion":"","eventTime":"2026-01-05T10:00:03.000Z","eventName":"s3:ObjectCreated:Put","s3":{"s3SchemaVersion":"1.0","bucket":{"name":"landing"},"object":{"key":"gw%2Fa+b.csv","size":12}}}]}`,
			MinIO, []Event{{Provider: MinIO, Name: "s3:ObjectCreated:Put", Created: true, Bucket: "landing", Key: "gw/a b.csv", Size: 12, Time: at}}, ""},
		{"aws records", `{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","eventTime":"2026-01-05T10:00:03.000Z","eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"landing"},"object":{"key":"gw/a+b%2Bc%C3%A9.csv","size":5}}},
			{"eventSource":"aws:s3","eventName":"ObjectRemoved:Delete","s3":{"bucket":{"name":"landing"},"object":{"key":"gw/x.csv"}}}]}`,
			AWS, []Event{
				{Provider: AWS, Name: "ObjectCreated:Put", Created: true, Bucket: "landing", Key: "gw/a b+cé.csv", Size: 5, Time: at},
				{Provider: AWS, Name: "ObjectRemoved:Delete", Bucket: "landing", Key: "gw/x.csv"},
			}, ""},
		{"aws eventbridge", `{"version":"0","id":"1","detail-type":"Object Created","source":"aws.s3","account":"1","time":"2026-01-05T10:00:03Z","region":"eu-west-1","resources":["arn:aws:s3:::landing"],"detail":{"version":"0","bucket":{"name":"landing"},"object":{"key":"gw/a:b.csv","size":7},"reason":"PutObject"}}`,
			AWS, []Event{{Provider: AWS, Name: "Object Created", Created: true, Bucket: "landing", Key: "gw/a:b.csv", Size: 7, Time: at}}, ""},
		{"aws eventbridge delete", `{"detail-type":"Object Deleted","source":"aws.s3","detail":{"bucket":{"name":"landing"},"object":{"key":"gw/a.csv"}}}`,
			AWS, []Event{{Provider: AWS, Name: "Object Deleted", Bucket: "landing", Key: "gw/a.csv"}}, ""},
		{"aws sns notification", `{"Type":"Notification","MessageId":"1","TopicArn":"arn:aws:sns:eu-west-1:1:landing","Message":"{\"Records\":[{\"eventSource\":\"aws:s3\",\"eventName\":\"ObjectCreated:Put\",\"s3\":{\"bucket\":{\"name\":\"landing\"},\"object\":{\"key\":\"gw/a.csv\"}}}]}"}`,
			AWS, []Event{{Provider: AWS, Name: "ObjectCreated:Put", Created: true, Bucket: "landing", Key: "gw/a.csv"}}, ""},
		{"aws sns subscription", `{"Type":"SubscriptionConfirmation","TopicArn":"arn:aws:sns:eu-west-1:1:landing","SubscribeURL":"https://sns.example/confirm?t=1"}`,
			AWS, nil, "https://sns.example/confirm?t=1"},
		{"aws test event", `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-01-05T10:00:03Z","Bucket":"landing"}`, AWS, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := ParseNotification([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if n.Provider != tc.provider || n.SubscribeURL != tc.url || len(n.Events) != len(tc.want) {
				t.Fatalf("got %+v", n)
			}
			for i, ev := range n.Events {
				if !ev.Time.Equal(tc.want[i].Time) {
					t.Errorf("event %d time %s, want %s", i, ev.Time, tc.want[i].Time)
				}
				ev.Time = tc.want[i].Time
				if ev != tc.want[i] {
					t.Errorf("event %d:\n got %+v\nwant %+v", i, ev, tc.want[i])
				}
			}
		})
	}
	for body, unknown := range map[string]bool{`{"events":`: false, `[1,2]`: false, `{"hello":"world"}`: true, `{"Records":"x"}`: false} {
		_, err := ParseNotification([]byte(body))
		if err == nil || errors.Is(err, ErrUnknownShape) != unknown {
			t.Errorf("%s: error %v", body, err)
		}
	}
}
