package httpapi_test

import (
	"io/fs"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/openprogram/lifecycle/shared/httpapi"
)

// specOperation is one operation of api/openapi.yaml as the reference page
// must list it: "METHOD /path" under its first tag.
type specOperation struct {
	key, tag, id string
}

func specOperations(t *testing.T) []specOperation {
	t.Helper()
	var out []specOperation
	for path, item := range loadOpenAPI(t).doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			switch method {
			case "get", "put", "post", "delete", "patch":
			default:
				continue
			}
			o := op.(map[string]any)
			tags, _ := o["tags"].([]any)
			if len(tags) == 0 {
				t.Fatalf("%s %s has no tag: the reference page lists operations by tag", method, path)
			}
			id, _ := o["operationId"].(string)
			out = append(out, specOperation{key: strings.ToUpper(method) + " " + path, tag: tags[0].(string), id: id})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// requireDocsPage skips a test that needs the rendered page when it was
// not built, unless the build says it must be there (make unit).
func requireDocsPage(t *testing.T) {
	t.Helper()
	if _, err := fs.Stat(os.DirFS("apidocs"), "index.html"); err != nil {
		if os.Getenv("LIFECYCLE_API_DOCS_REQUIRED") != "" {
			t.Fatalf("apidocs/index.html is missing but LIFECYCLE_API_DOCS_REQUIRED is set: `%s` did not run before the tests", httpapi.DocsTarget)
		}
		t.Skipf("the API reference page is not built (%s; make unit builds it)", httpapi.DocsTarget)
	}
}

// TestDocsPageListsEveryOperationOffline opens the Activity UI, follows its
// link to /docs in chromium with every host but 127.0.0.1 unresolvable,
// and finds on the rendered page every operation of api/openapi.yaml,
// under its tag, and none it does not have. Every request the page makes
// must go to the server itself: the renderer is bundled, not fetched.
func TestDocsPageListsEveryOperationOffline(t *testing.T) {
	requireDocsPage(t)
	s := newUIStack(t)
	browser := newBrowser(t)
	p := openPage(t, browser, "docs", s.srv.URL+"/ui/")

	origin, _ := url.Parse(s.srv.URL)
	var mu sync.Mutex
	var offsite []string
	if _, err := chromedp.Call(p.ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("enable network events: %v", err)
	}
	go func() {
		for ev, err := range chromedp.Events(p.ctx, network.RequestWillBeSent) {
			if err != nil {
				return
			}
			u, err := url.Parse(ev.Request.URL)
			if err == nil && (u.Scheme == "data" || u.Scheme == "blob" || u.Scheme == "about" || u.Host == origin.Host) {
				continue
			}
			mu.Lock()
			offsite = append(offsite, ev.Request.URL)
			mu.Unlock()
		}
	}()

	// The Activity UI links to the page.
	p.wait("#api-docs")
	if href := eval[string](p, `document.getElementById("api-docs").href`); href != s.srv.URL+httpapi.DocsPath {
		p.fail("the Activity UI's API reference link goes to %q, want %q", href, s.srv.URL+httpapi.DocsPath)
	}
	p.do(chromedp.Navigate(s.srv.URL + httpapi.DocsPath))
	p.waitJS("the page's tag sections", `document.querySelectorAll("#api-content [data-section-id]").length > 1`)
	if title := eval[string](p, "document.title"); title != loadOpenAPI(t).doc["info"].(map[string]any)["title"] {
		p.fail("page title %q is not the spec's info.title", title)
	}
	p.shot("top")

	// Redoc renders a tag's section when it scrolls into view: each is
	// scrolled to, then its operation list is read.
	sections := eval[[]string](p, `Array.from(document.querySelectorAll("#api-content [data-section-id]")).map(e => e.dataset.sectionId).filter(id => id !== "/")`)
	shown := map[string]string{} // "METHOD /path" -> tag it is listed under
	for _, id := range sections {
		sel := `document.querySelector('[data-section-id=` + jsString(id) + `]')`
		eval[bool](p, sel+`.scrollIntoView(), true`)
		p.waitJS("the operations of "+id, sel+`.innerText.includes("Operations") && `+sel+`.querySelectorAll("a[href]").length > 1`)
		// A tag with many operations lists a few and a "Show N more..."
		// control: open it.
		more := `Array.from(` + sel + `.querySelectorAll("*")).filter(e => e.children.length === 0 && /^Show \d+ more/.test((e.textContent || "").trim()))`
		eval[bool](p, more+`.forEach(e => e.click()), true`)
		p.waitJS("every operation of "+id, more+`.length === 0`)
		// An operation's entry is a link whose text is its method, then its path.
		entries := eval[[]string](p, `Array.from(`+sel+`.querySelectorAll("a[href]")).map(a => a.innerText.trim().split(/\s+/).join(" ")).filter(s => /^(GET|PUT|POST|DELETE|PATCH) \//.test(s))`)
		for _, e := range entries {
			shown[e] = strings.TrimPrefix(id, "/")
		}
	}
	var missing, extra []string
	want := map[string]bool{}
	for _, op := range specOperations(t) {
		want[op.key] = true
		tag, ok := shown[op.key]
		switch {
		case !ok:
			missing = append(missing, op.key+" ("+op.id+")")
		case tag != op.tag:
			t.Errorf("%s is listed under %q, want its tag %q", op.key, tag, op.tag)
		}
	}
	for k := range shown {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	if len(missing) > 0 || len(extra) > 0 {
		p.fail("the reference page and api/openapi.yaml differ\nnot on the page: %v\nnot in the spec: %v", missing, extra)
	}
	p.shot("bottom")
	mu.Lock()
	defer mu.Unlock()
	if len(offsite) > 0 {
		t.Fatalf("the page requested %d resources off this server (it must work offline): %v", len(offsite), offsite)
	}
}
