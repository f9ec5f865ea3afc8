package httpapi

import (
	"os"
	"regexp"
	"testing"
)

// Every route of the API's table is a route of the API Gateway in the CDK
// app (infra/stack/api.go), which has no catch-all route: a route missing
// there never reaches the api function on AWS. (The host heartbeat route was
// missing: a remote worker's heartbeats would have failed and its tasks
// ended unknown after a minute.) The CDK app is its own module, so its
// route table is read as source.
func TestEveryRouteIsAnAPIGatewayRoute(t *testing.T) {
	src, err := os.ReadFile("../../infra/stack/api.go")
	if err != nil {
		t.Fatal(err)
	}
	gateway := map[string]bool{}
	for _, m := range regexp.MustCompile(`\{Method: "([A-Z]+)", Path: "([^"]+)"`).FindAllStringSubmatch(string(src), -1) {
		gateway[m[1]+" "+m[2]] = true
	}
	if len(gateway) == 0 {
		t.Fatal("no routes found in infra/stack/api.go: the pattern no longer matches its source")
	}
	for _, rt := range (&api{}).table() {
		if !gateway[rt.pattern] {
			t.Errorf("%s is served by the api but has no API Gateway route in infra/stack/api.go", rt.pattern)
		}
	}
}
