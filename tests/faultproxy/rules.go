package main

// The fault rules: those the retired tests/kubesim took (its faults.cpp), the same JSON, field
// names, defaults, error messages and semantics, and the same pseudo-random sequence (std::mt19937_64 drawn through libstdc++'s
// uniform_real_distribution<double>), so that a test's rules and seed carry over unchanged.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

var faultNames = map[string]bool{"500": true, "503": true, "429": true, "reset-before": true,
	"reset-after": true, "slow": true, "watch-cut": true}

type rule struct {
	fault             string
	verbs, resources  map[string]bool // empty: all
	userAgent         string          // substring of the User-Agent; empty: every client
	fraction          float64
	delaySeconds      float64
	retryAfterSeconds int // -1: no Retry-After header
	cutAfterEvents    int
	limit             int64 // -1: no limit
	injected          int64
}

// decision is what pick answers for one request: the fault to inject ("" for none).
type decision struct {
	fault      string
	delay      time.Duration
	retryAfter int
	cutAfter   int
}

type injector struct {
	mu         sync.Mutex
	seed       uint64
	rng        mt64
	rules      []*rule
	injected   map[string]int64 // by fault name since start (configure and clear keep them)
	considered int64            // requests some rule matched
}

func newInjector() *injector {
	f := &injector{seed: 1, injected: map[string]int64{}}
	f.rng.seed(1)
	return f
}

type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func bad(format string, a ...any) error { return &configError{fmt.Sprintf(format, a...)} }

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func stringSet(r map[string]any, key, where string) (map[string]bool, error) {
	out := map[string]bool{}
	v, ok := r[key]
	if !ok {
		return out, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, bad("%s.%s must be a list of strings", where, key)
	}
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, bad("%s.%s must be a list of strings", where, key)
		}
		out[s] = true
	}
	return out, nil
}

func numberIn(r map[string]any, key string, def, lo, hi float64, where string) (float64, error) {
	v, ok := r[key]
	if !ok {
		return def, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, bad("%s.%s must be a number", where, key)
	}
	f, err := n.Float64()
	if err != nil || !(f >= lo && f <= hi) {
		return 0, bad("%s.%s must be in [%s, %s]", where, key, fmtNum(lo), fmtNum(hi))
	}
	return f, nil
}

var ruleFields = map[string]bool{"fault": true, "verbs": true, "resources": true, "userAgent": true,
	"fraction": true, "delaySeconds": true, "retryAfterSeconds": true, "cutAfterEvents": true, "limit": true}

func parseRule(v any, where string) (*rule, error) {
	r, ok := v.(map[string]any)
	if !ok {
		return nil, bad("%s must be an object", where)
	}
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !ruleFields[k] {
			return nil, bad("%s: unknown field %q", where, k)
		}
	}
	ru := &rule{}
	ru.fault, _ = r["fault"].(string)
	if !faultNames[ru.fault] {
		return nil, bad("%s.fault must be one of 500, 503, 429, reset-before, reset-after, slow, watch-cut", where)
	}
	var err error
	if ru.verbs, err = stringSet(r, "verbs", where); err != nil {
		return nil, err
	}
	if ru.resources, err = stringSet(r, "resources", where); err != nil {
		return nil, err
	}
	if ua, ok := r["userAgent"]; ok {
		if ru.userAgent, ok = ua.(string); !ok {
			return nil, bad("%s.userAgent must be a string", where)
		}
	}
	if ru.fraction, err = numberIn(r, "fraction", 1, 0, 1, where); err != nil {
		return nil, err
	}
	if ru.delaySeconds, err = numberIn(r, "delaySeconds", 5, 0, 600, where); err != nil {
		return nil, err
	}
	// 429 always carries Retry-After (1 s unless given); 503 and 500 only when the rule gives one.
	unset := -1.0
	if ru.fault == "429" {
		unset = 1
	}
	f, err := numberIn(r, "retryAfterSeconds", unset, 0, 3600, where)
	if err != nil {
		return nil, err
	}
	ru.retryAfterSeconds = int(f)
	if f, err = numberIn(r, "cutAfterEvents", 0, 0, 1e6, where); err != nil {
		return nil, err
	}
	ru.cutAfterEvents = int(f)
	if f, err = numberIn(r, "limit", -1, -1, 1e12, where); err != nil {
		return nil, err
	}
	ru.limit = int64(f)
	return ru, nil
}

// configure replaces the rules and reseeds: {"seed": N, "rules": [{"fault": "500", ...}]}.
// A bad configuration changes nothing and is answered with an error naming the field.
func (f *injector) configure(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return bad("the fault configuration is not valid JSON")
	}
	spec, ok := v.(map[string]any)
	if !ok {
		return bad("the fault configuration must be a JSON object")
	}
	var rules []*rule
	if rv, ok := spec["rules"]; ok {
		list, ok := rv.([]any)
		if !ok {
			return bad("rules must be a list")
		}
		for i, e := range list {
			r, err := parseRule(e, fmt.Sprintf("rules[%d]", i))
			if err != nil {
				return err
			}
			rules = append(rules, r)
		}
	}
	seed := uint64(1)
	if sv, ok := spec["seed"]; ok {
		n, ok := sv.(json.Number)
		var err error
		if ok {
			seed, err = strconv.ParseUint(n.String(), 10, 64)
		}
		if !ok || err != nil {
			return bad("seed must be a non-negative integer")
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules, f.seed = rules, seed
	f.rng.seed(seed)
	return nil
}

func (f *injector) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

func sortedKeys(m map[string]bool) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// describe: the rules with their counts, the seed, and `injected` by fault name since start
// (as the retired kubesim's GET /kubesim/v1/faults, plus each rule's parameters).
func (f *injector) describe() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	rules := []any{}
	for _, r := range f.rules {
		d := map[string]any{"fault": r.fault, "verbs": sortedKeys(r.verbs), "resources": sortedKeys(r.resources),
			"userAgent": r.userAgent, "fraction": r.fraction, "injected": r.injected}
		if r.limit >= 0 {
			d["limit"] = r.limit
		}
		if r.retryAfterSeconds >= 0 {
			d["retryAfterSeconds"] = r.retryAfterSeconds
		}
		switch r.fault {
		case "slow":
			d["delaySeconds"] = r.delaySeconds
		case "watch-cut":
			d["cutAfterEvents"] = r.cutAfterEvents
		}
		rules = append(rules, d)
	}
	injected := map[string]int64{}
	for k, v := range f.injected {
		injected[k] = v
	}
	return map[string]any{"seed": f.seed, "rules": rules, "considered": f.considered, "injected": injected}
}

func (r *rule) matches(verb, resource, sub, userAgent string) bool {
	if len(r.verbs) > 0 && !r.verbs[verb] {
		return false
	}
	if len(r.resources) > 0 && !r.resources[resource] && !r.resources[resource+"/"+sub] {
		return false
	}
	if r.userAgent != "" && !strings.Contains(userAgent, r.userAgent) {
		return false
	}
	// A reset after applying needs something applied; a watch is cut with watch-cut.
	if r.fault == "reset-after" && (verb == "watch" || verb == "get" || verb == "list") {
		return false
	}
	if r.fault == "watch-cut" && verb != "watch" {
		return false
	}
	return r.limit < 0 || r.injected < r.limit
}

// pick decides whether (and how) a resource request fails. Every rule that matches draws once
// from the one sequence, in order, until one draw falls under its rule's fraction.
func (f *injector) pick(verb, resource, sub, userAgent string) decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	matched := false
	for _, r := range f.rules {
		if !r.matches(verb, resource, sub, userAgent) {
			continue
		}
		matched = true
		if f.rng.canonical() >= r.fraction {
			continue
		}
		r.injected++
		f.injected[r.fault]++
		f.considered++
		return decision{fault: r.fault, delay: time.Duration(r.delaySeconds * float64(time.Second)),
			retryAfter: r.retryAfterSeconds, cutAfter: r.cutAfterEvents}
	}
	if matched {
		f.considered++
	}
	return decision{}
}

// mt64 is std::mt19937_64.
type mt64 struct {
	mt  [312]uint64
	mti int
}

func (m *mt64) seed(s uint64) {
	m.mt[0] = s
	for i := 1; i < len(m.mt); i++ {
		m.mt[i] = 6364136223846793005*(m.mt[i-1]^(m.mt[i-1]>>62)) + uint64(i)
	}
	m.mti = len(m.mt)
}

func (m *mt64) next() uint64 {
	const n, mid, upper, lower = 312, 156, 0xFFFFFFFF80000000, 0x7FFFFFFF
	if m.mti >= n {
		for i := 0; i < n; i++ {
			x := (m.mt[i] & upper) | (m.mt[(i+1)%n] & lower)
			xa := x >> 1
			if x&1 != 0 {
				xa ^= 0xB5026F5AA96619E9
			}
			m.mt[i] = m.mt[(i+mid)%n] ^ xa
		}
		m.mti = 0
	}
	x := m.mt[m.mti]
	m.mti++
	x ^= (x >> 29) & 0x5555555555555555
	x ^= (x << 17) & 0x71D67FFFEDA60000
	x ^= (x << 37) & 0xFFF7EEE000000000
	x ^= x >> 43
	return x
}

// canonical is uniform_real_distribution<double>(0, 1) over the engine as libstdc++ computes it
// (generate_canonical<double, 53>: one 64-bit draw divided by 2^64, kept below 1).
func (m *mt64) canonical() float64 {
	r := float64(m.next()) / 18446744073709551616.0
	if r >= 1 {
		r = math.Nextafter(1, 0)
	}
	return r
}
