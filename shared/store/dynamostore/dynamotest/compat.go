package dynamotest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
)

// compat stands in front of minidyn's HTTP handler and makes it answer as
// DynamoDB does where minidyn v0.8.2 differs in ways the store depends on.
// Each fix is narrow, applies only to the request shape it names, and is
// listed in ../doc.go:
//
//  1. contains(path, v) on a missing attribute is false in DynamoDB; minidyn
//     fails the request ("contains is not supported for path=NULL"). When
//     the attribute is absent from the stored item, the shim rewrites
//     contains(#a, :v) to attribute_exists(#a), which is false under that
//     very condition, so the expression means the same.
//  2. An item written without a GSI's key attributes leaves the index in
//     DynamoDB; minidyn keeps a stale index entry (and a sort-key condition
//     on that index then fails on the entry's missing key). After a write
//     that took an index key away, the shim puts the old item back, deletes
//     it and puts the new one: minidyn drops an index entry only when it
//     deletes an item that still carries the index keys.
//  3. DescribeTable reports no TableStatus, so the SDK's TableExists waiter
//     never sees ACTIVE: the shim fills in ACTIVE (minidyn tables are usable
//     at once).
//  4. UpdateTimeToLive is not implemented. DynamoDB deletes expired items
//     only eventually (typically within days), so "never" is an allowed
//     outcome: the shim accepts the call and stores nothing.
//
// Every request holds one lock, so a fix's extra requests are never seen
// half-done by a concurrent request.
type compat struct {
	inner http.Handler
	mu    sync.Mutex
	// schemas caches each table's key attributes: [table key, gsi1 key, ...].
	schemas map[string]tableSchema
}

type tableSchema struct {
	key     []string            // table key attribute names
	indexes map[string][]string // index name -> its key attribute names
}

// item is a DynamoDB JSON item with its attribute values left encoded.
type item map[string]json.RawMessage

func newCompat(inner http.Handler) *compat {
	return &compat{inner: inner, schemas: map[string]tableSchema{}}
}

func (c *compat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	c.mu.Lock()
	defer c.mu.Unlock()

	switch op {
	case "UpdateTimeToLive":
		c.updateTimeToLive(w, body)
		return
	case "DeleteTable", "CreateTable":
		var in struct{ TableName string }
		json.Unmarshal(body, &in)
		delete(c.schemas, in.TableName)
	case "DescribeTable":
		status, header, out := c.call(op, body)
		if status == http.StatusOK {
			out = describeActive(out)
		}
		writeResponse(w, status, header, out)
		return
	case "PutItem", "UpdateItem", "DeleteItem":
		c.write(w, op, body)
		return
	case "TransactWriteItems":
		c.transactWrite(w, body)
		return
	}
	status, header, out := c.call(op, body)
	writeResponse(w, status, header, out)
}

// call runs one request against minidyn.
func (c *compat) call(op string, body []byte) (int, http.Header, []byte) {
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	rec := httptest.NewRecorder()
	c.inner.ServeHTTP(rec, req)
	return rec.Code, rec.Header(), rec.Body.Bytes()
}

func writeResponse(w http.ResponseWriter, status int, header http.Header, body []byte) {
	for k, v := range header {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	w.Write(body)
}

func (c *compat) updateTimeToLive(w http.ResponseWriter, body []byte) {
	var in struct {
		TimeToLiveSpecification json.RawMessage
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, _ := json.Marshal(map[string]json.RawMessage{"TimeToLiveSpecification": in.TimeToLiveSpecification})
	writeResponse(w, http.StatusOK, http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, out)
}

// describeActive sets TableStatus and every IndexStatus to ACTIVE where
// minidyn left them out.
func describeActive(out []byte) []byte {
	var resp map[string]map[string]any
	if err := json.Unmarshal(out, &resp); err != nil || resp["Table"] == nil {
		return out
	}
	t := resp["Table"]
	if s, _ := t["TableStatus"].(string); s == "" {
		t["TableStatus"] = "ACTIVE"
	}
	if gsis, ok := t["GlobalSecondaryIndexes"].([]any); ok {
		for _, g := range gsis {
			if m, ok := g.(map[string]any); ok {
				if s, _ := m["IndexStatus"].(string); s == "" {
					m["IndexStatus"] = "ACTIVE"
				}
			}
		}
	}
	fixed, err := json.Marshal(resp)
	if err != nil {
		return out
	}
	return fixed
}

// writeRequest is the part of a PutItem/UpdateItem/DeleteItem (or of one
// TransactWriteItems entry) the shim reads.
type writeRequest struct {
	TableName                 string
	Key                       item
	Item                      item
	ConditionExpression       string
	UpdateExpression          string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]json.RawMessage
}

func (c *compat) write(w http.ResponseWriter, op string, body []byte) {
	var req writeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		status, header, out := c.call(op, body) // let minidyn report it
		writeResponse(w, status, header, out)
		return
	}
	schema, err := c.schema(req.TableName)
	if err != nil {
		status, header, out := c.call(op, body)
		writeResponse(w, status, header, out)
		return
	}
	key := req.Key
	if op == "PutItem" {
		key = project(req.Item, schema.key)
	}
	before := c.get(req.TableName, key)
	if body, err = rewriteContains(body, req, before); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	status, header, out := c.call(op, body)
	if status == http.StatusOK {
		c.dropStaleIndexEntries(req.TableName, schema, key, before)
	}
	writeResponse(w, status, header, out)
}

func (c *compat) transactWrite(w http.ResponseWriter, body []byte) {
	var req struct {
		TransactItems []struct {
			Put    *writeRequest
			Update *writeRequest
		}
	}
	type written struct {
		table  string
		schema tableSchema
		key    item
		before item
	}
	var writes []written
	if err := json.Unmarshal(body, &req); err == nil {
		for _, ti := range req.TransactItems {
			wr, isPut := ti.Update, false
			if ti.Put != nil {
				wr, isPut = ti.Put, true
			}
			if wr == nil {
				continue
			}
			schema, err := c.schema(wr.TableName)
			if err != nil {
				continue
			}
			key := wr.Key
			if isPut {
				key = project(wr.Item, schema.key)
			}
			writes = append(writes, written{wr.TableName, schema, key, c.get(wr.TableName, key)})
		}
	}
	status, header, out := c.call("TransactWriteItems", body)
	if status == http.StatusOK {
		for _, wr := range writes {
			c.dropStaleIndexEntries(wr.table, wr.schema, wr.key, wr.before)
		}
	}
	writeResponse(w, status, header, out)
}

var containsCall = regexp.MustCompile(`contains\s*\(\s*(#[A-Za-z0-9_]+)\s*,\s*(:[A-Za-z0-9_]+)\s*\)`)

// rewriteContains applies fix 1 to the request's ConditionExpression.
func rewriteContains(body []byte, req writeRequest, stored item) ([]byte, error) {
	if !containsCall.MatchString(req.ConditionExpression) {
		return body, nil
	}
	removed := map[string]bool{}
	cond := containsCall.ReplaceAllStringFunc(req.ConditionExpression, func(call string) string {
		m := containsCall.FindStringSubmatch(call)
		attr, ok := req.ExpressionAttributeNames[m[1]]
		if !ok || stored[attr] != nil {
			return call // the attribute exists: minidyn evaluates it correctly
		}
		removed[m[2]] = true
		return "attribute_exists(" + m[1] + ")"
	})
	if len(removed) == 0 {
		return body, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, err
	}
	raw["ConditionExpression"], _ = json.Marshal(cond)
	// DynamoDB refuses values no expression uses: drop the ones that only
	// the rewritten calls used.
	values := map[string]json.RawMessage{}
	for k, v := range req.ExpressionAttributeValues {
		if removed[k] && !usesValue(cond, k) && !usesValue(req.UpdateExpression, k) {
			continue
		}
		values[k] = v
	}
	raw["ExpressionAttributeValues"], _ = json.Marshal(values)
	return json.Marshal(raw)
}

func usesValue(expr, placeholder string) bool {
	return regexp.MustCompile(regexp.QuoteMeta(placeholder) + `\b`).MatchString(expr)
}

// dropStaleIndexEntries applies fix 2 to one written key.
func (c *compat) dropStaleIndexEntries(table string, schema tableSchema, key, before item) {
	if before == nil {
		return // a new item has no index entry to go stale
	}
	after := c.get(table, key)
	if after == nil {
		return
	}
	for _, attrs := range schema.indexes {
		if hasAll(before, attrs) && !hasAll(after, attrs) {
			// minidyn removes an index entry only when it deletes an item
			// that still has the index keys: put the old item back, delete
			// it, then put the new one.
			c.call("PutItem", mustJSON(map[string]any{"TableName": table, "Item": before}))
			c.call("DeleteItem", mustJSON(map[string]any{"TableName": table, "Key": key}))
			c.call("PutItem", mustJSON(map[string]any{"TableName": table, "Item": after}))
			return
		}
	}
}

// get reads an item (nil when absent or unreadable).
func (c *compat) get(table string, key item) item {
	if len(key) == 0 {
		return nil
	}
	status, _, out := c.call("GetItem", mustJSON(map[string]any{"TableName": table, "Key": key, "ConsistentRead": true}))
	if status != http.StatusOK {
		return nil
	}
	var resp struct{ Item item }
	if json.Unmarshal(out, &resp) != nil || len(resp.Item) == 0 {
		return nil
	}
	return resp.Item
}

func (c *compat) schema(table string) (tableSchema, error) {
	if s, ok := c.schemas[table]; ok {
		return s, nil
	}
	status, _, out := c.call("DescribeTable", mustJSON(map[string]any{"TableName": table}))
	if status != http.StatusOK {
		return tableSchema{}, fmt.Errorf("describe table %s: status %d", table, status)
	}
	type keyElem struct{ AttributeName string }
	var resp struct {
		Table struct {
			KeySchema              []keyElem
			GlobalSecondaryIndexes []struct {
				IndexName string
				KeySchema []keyElem
			}
		}
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return tableSchema{}, err
	}
	names := func(ks []keyElem) []string {
		out := make([]string, len(ks))
		for i, k := range ks {
			out[i] = k.AttributeName
		}
		return out
	}
	s := tableSchema{key: names(resp.Table.KeySchema), indexes: map[string][]string{}}
	for _, g := range resp.Table.GlobalSecondaryIndexes {
		s.indexes[g.IndexName] = names(g.KeySchema)
	}
	c.schemas[table] = s
	return s, nil
}

func project(it item, attrs []string) item {
	out := item{}
	for _, a := range attrs {
		if v, ok := it[a]; ok {
			out[a] = v
		}
	}
	return out
}

func hasAll(it item, attrs []string) bool {
	for _, a := range attrs {
		if it[a] == nil {
			return false
		}
	}
	return true
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of strings and raw JSON reach here
	}
	return b
}
