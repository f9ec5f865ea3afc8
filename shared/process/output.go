package process

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/store"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// MaxPageBytes bounds one page of output.
const MaxPageBytes = 64 << 10

// Page is a page of one stream's output.
type Page struct {
	ProcessID string `json:"process_id"`
	Stream    string `json:"stream"`
	// From is the stream offset of Data's first byte. It is greater than
	// the requested cursor when the bytes between were dropped (Truncated):
	// only the last RetainBytes of a stream are kept.
	From      int64  `json:"from"`
	Data      []byte `json:"-"`
	Truncated bool   `json:"truncated"`
	// Next is the cursor of the next page (after=Next).
	Next int64 `json:"next"`
	// Total is how many bytes the process has written to the stream.
	Total int64 `json:"total"`
	// Ended: the process has ended and Next == Total (nothing more will come).
	Ended  bool   `json:"ended"`
	Status Status `json:"status"`
}

// Output reads a stream's output after cursor after (a byte offset of the
// stream; 0 from the start), at most limit bytes (0 or more than
// MaxPageBytes: MaxPageBytes).
func (s *Service) Output(ctx context.Context, id, stream string, after int64, limit int) (Page, error) {
	if !ValidStream(stream) {
		return Page{}, &actionflow.ValidationError{Field: "stream", Msg: fmt.Sprintf("%q is not stdout or stderr", stream)}
	}
	if after < 0 {
		return Page{}, &actionflow.ValidationError{Field: "after", Msg: "must be a cursor >= 0"}
	}
	if limit <= 0 || limit > MaxPageBytes {
		limit = MaxPageBytes
	}
	r, err := s.Get(ctx, id)
	if err != nil {
		return Page{}, err
	}
	ss := r.Streams[stream]
	p := Page{ProcessID: id, Stream: stream, From: min(after, ss.Bytes), Total: ss.Bytes, Status: r.Status}
	if after < ss.Bytes {
		page, err := s.Store.Query(ctx, metaKey(id).PK, storeQuery(chunkSK+stream+"#"))
		if err != nil {
			return Page{}, fmt.Errorf("read output of %s: %w", id, err)
		}
		var cs []chunk
		for _, it := range page.Items {
			var c chunk
			if err := json.Unmarshal(it.Body, &c); err != nil {
				return Page{}, fmt.Errorf("decode a chunk of %s: %w", id, err)
			}
			cs = append(cs, c)
		}
		sort.Slice(cs, func(i, j int) bool { return cs[i].Offset < cs[j].Offset })
		if len(cs) > 0 && cs[0].Offset > after {
			p.From, p.Truncated = cs[0].Offset, true
		}
		for _, c := range cs {
			end := c.Offset + int64(len(c.Data))
			if end <= p.From+int64(len(p.Data)) || c.Offset > p.From+int64(len(p.Data)) {
				continue
			}
			start := p.From + int64(len(p.Data)) - c.Offset
			take := c.Data[start:]
			if room := limit - len(p.Data); len(take) > room {
				take = take[:room]
			}
			p.Data = append(p.Data, take...)
			if len(p.Data) >= limit {
				break
			}
		}
	}
	p.Next = p.From + int64(len(p.Data))
	p.Ended = r.Status.Terminal() && p.Next >= ss.Bytes
	return p, nil
}

func storeQuery(prefix string) store.QueryOptions {
	return store.QueryOptions{SKPrefix: prefix, Limit: RetainChunks}
}
