package main

import (
	"fmt"
	"strings"
	"testing"
)

func mustConfigure(t *testing.T, f *injector, spec string) {
	t.Helper()
	if err := f.configure([]byte(spec)); err != nil {
		t.Fatalf("configure(%s): %v", spec, err)
	}
}

// The sequence is std::mt19937_64's, drawn as libstdc++'s uniform_real_distribution<double>:
// the values a C++ program (g++ 12) prints, so kubesim's seeds give the same faults here.
func TestSequenceIsKubesims(t *testing.T) {
	var m mt64
	m.seed(5489) // the default seed: the standard fixes the 10000th value
	for i := 0; i < 9999; i++ {
		m.next()
	}
	if v := m.next(); v != 9981545732273789042 {
		t.Fatalf("10000th value of mt19937_64: %d", v)
	}
	m.seed(1)
	if v := m.next(); v != 2469588189546311528 {
		t.Fatalf("first value for seed 1: %d", v)
	}
	m.seed(11)
	want := []string{"0.1657131126044567", "0.77342585615343928", "0.37802519926765099", "0.6986280864961496",
		"0.05870888342114354", "0.28398493221967031"}
	for i, w := range want {
		if got := fmt.Sprintf("%.17g", m.canonical()); got != w {
			t.Fatalf("draw %d for seed 11: %s, want %s", i, got, w)
		}
	}
}

func TestParseErrorsNameTheField(t *testing.T) {
	cases := map[string]string{
		`{"rules":[{"fault":"500","fraction":1.5}]}`:            "rules[0].fraction must be in [0, 1]",
		`{"rules":[{"fault":"500"},{"fault":"boom"}]}`:          "rules[1].fault must be one of 500, 503, 429, reset-before, reset-after, slow, watch-cut",
		`{"rules":[{"verbs":["get"]}]}`:                         "rules[0].fault must be one of",
		`{"rules":[{"fault":"500","verbs":"get"}]}`:             "rules[0].verbs must be a list of strings",
		`{"rules":[{"fault":"500","resources":[1]}]}`:           "rules[0].resources must be a list of strings",
		`{"rules":[{"fault":"500","userAgent":3}]}`:             "rules[0].userAgent must be a string",
		`{"rules":[{"fault":"500","fraction":"x"}]}`:            "rules[0].fraction must be a number",
		`{"rules":[{"fault":"slow","delaySeconds":601}]}`:       "rules[0].delaySeconds must be in [0, 600]",
		`{"rules":[{"fault":"429","retryAfterSeconds":-1}]}`:    "rules[0].retryAfterSeconds must be in [0, 3600]",
		`{"rules":[{"fault":"watch-cut","cutAfterEvents":-2}]}`: "rules[0].cutAfterEvents must be in [0, 1000000]",
		`{"rules":[{"fault":"500","limit":-5}]}`:                "rules[0].limit must be in [-1, 1000000000000]",
		`{"rules":[{"fault":"500","fractoin":0.5}]}`:            `rules[0]: unknown field "fractoin"`,
		`{"rules":["500"]}`:                                     "rules[0] must be an object",
		`{"rules":{}}`:                                          "rules must be a list",
		`{"seed":-1}`:                                           "seed must be a non-negative integer",
		`{"seed":1.5}`:                                          "seed must be a non-negative integer",
		`[]`:                                                    "the fault configuration must be a JSON object",
		`{"rules":[`:                                            "the fault configuration is not valid JSON",
	}
	for spec, want := range cases {
		f := newInjector()
		mustConfigure(t, f, `{"seed":5,"rules":[{"fault":"503"}]}`)
		err := f.configure([]byte(spec))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("configure(%s): %v, want %q", spec, err, want)
		}
		if d := f.describe(); d["seed"] != uint64(5) || len(d["rules"].([]any)) != 1 {
			t.Errorf("configure(%s) changed the rules: %v", spec, d)
		}
	}
}

func TestDefaults(t *testing.T) {
	f := newInjector()
	mustConfigure(t, f, `{"rules":[{"fault":"429"},{"fault":"503"},{"fault":"slow"},{"fault":"watch-cut"}]}`)
	r := f.rules
	if r[0].retryAfterSeconds != 1 || r[1].retryAfterSeconds != -1 || r[2].delaySeconds != 5 ||
		r[3].cutAfterEvents != 0 || r[0].fraction != 1 || r[0].limit != -1 || f.seed != 1 {
		t.Fatalf("defaults: %+v %+v %+v %+v seed %d", *r[0], *r[1], *r[2], *r[3], f.seed)
	}
	if d := f.pick("get", "pods", "", "x"); d.fault != "429" || d.retryAfter != 1 {
		t.Fatalf("pick: %+v", d)
	}
}

func TestMatching(t *testing.T) {
	f := newInjector()
	mustConfigure(t, f, `{"rules":[
		{"fault":"500","verbs":["create","patch"],"resources":["pods","benchmarkjobs/status"],"userAgent":"trainbench-operator"},
		{"fault":"reset-after"},
		{"fault":"watch-cut","resources":["configmaps"]}]}`)
	op := "trainbench-operator/0.1 (linux/amd64)"
	cases := []struct{ verb, res, sub, ua, want string }{
		{"create", "pods", "", op, "500"},
		{"patch", "pods", "status", op, "500"}, // pods matches its subresources
		{"create", "pods", "binding", op, "500"},
		{"patch", "benchmarkjobs", "status", op, "500"},          // benchmarkjobs/status: that subresource
		{"patch", "benchmarkjobs", "", op, "reset-after"},        // ... not the main resource
		{"create", "pods", "", "kubectl/v1.37.2", "reset-after"}, // another client
		{"get", "pods", "", op, ""},                              // reset-after: writes only
		{"list", "pods", "", op, ""},
		{"watch", "pods", "", op, ""},
		{"watch", "configmaps", "", op, "watch-cut"},
		{"get", "configmaps", "", op, ""}, // watch-cut: watches only
		{"deletecollection", "secrets", "", "", "reset-after"},
	}
	for _, c := range cases {
		if got := f.pick(c.verb, c.res, c.sub, c.ua).fault; got != c.want {
			t.Errorf("%s %s/%s by %q: %q, want %q", c.verb, c.res, c.sub, c.ua, got, c.want)
		}
	}
}

func TestLimitAndCounts(t *testing.T) {
	f := newInjector()
	mustConfigure(t, f, `{"rules":[{"fault":"503","limit":2},{"fault":"429","verbs":["get"],"limit":1}]}`)
	var got []string
	for i := 0; i < 5; i++ {
		got = append(got, f.pick("get", "configmaps", "", "").fault)
	}
	if strings.Join(got, ",") != "503,503,429,," {
		t.Fatalf("faults: %q", got)
	}
	d := f.describe()
	inj := d["injected"].(map[string]int64)
	if inj["503"] != 2 || inj["429"] != 1 || d["considered"] != int64(3) {
		t.Fatalf("describe: %v", d)
	}
	f.clear()
	mustConfigure(t, f, `{"rules":[]}`)
	if inj := f.describe()["injected"].(map[string]int64); inj["503"] != 2 {
		t.Fatalf("the counts since start went: %v", inj)
	}
}

// Each matching rule draws once, in order; the first whose draw falls under its fraction wins;
// the same seed (PUT again) gives the same faults.
func TestSeededSequence(t *testing.T) {
	run := func(seed int) string {
		f := newInjector()
		mustConfigure(t, f, fmt.Sprintf(`{"seed":%d,"rules":[{"fault":"500","fraction":0.3},{"fault":"429","fraction":0.5,"verbs":["get"]}]}`, seed))
		var out []string
		for i := 0; i < 40; i++ {
			verb := []string{"get", "list"}[i%2]
			d := f.pick(verb, "configmaps", "", "")
			out = append(out, map[string]string{"": "-", "500": "5", "429": "4"}[d.fault])
		}
		return strings.Join(out, "")
	}
	a, b := run(11), run(11)
	if a != b {
		t.Fatalf("seed 11 twice: %s / %s", a, b)
	}
	if a == run(12) {
		t.Fatalf("seeds 11 and 12 give the same faults: %s", a)
	}
	// By hand from the C++ draws for seed 11 (0.166, 0.773, 0.378, 0.699, 0.0587, 0.284, ...):
	// request 1 (get): 0.166 < 0.3 -> 500; request 2 (list): 0.773 -> none; request 3 (get):
	// 0.378 -> not 500, 0.699 -> not 429; request 4 (list): 0.0587 -> 500; request 5 (get): 0.284 -> 500.
	if !strings.HasPrefix(a, "5--55") {
		t.Fatalf("seed 11: %s", a)
	}
}
