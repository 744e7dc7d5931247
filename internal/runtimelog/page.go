package runtimelog

import (
	"strings"
	"time"
)

// Page limits.
const (
	MaxTailLines     = 1000
	DefaultTailLines = 200
	// MaxReadBytes is what a driver may read from the runtime for one page.
	MaxReadBytes = 1 << 20
	// MaxPageBytes bounds the messages of one page; the rest is a truncated gap.
	MaxPageBytes = 512 << 10
)

// RawLine is one line as the runtime printed it, with the time the runtime stamped it (zero when
// it has none).
type RawLine struct {
	Time time.Time
	Text string
}

// Position is where a view stopped: the container instance and the last line read, given as its
// time and how many lines carry that same time (the runtime's clock has a finite resolution).
type Position struct {
	PodUID       string    `json:"u"`
	Container    string    `json:"c"`
	RestartCount int       `json:"r"`
	Time         time.Time `json:"t"`
	AtTime       int       `json:"n"`
}

// Input is what a driver read for one page.
type Input struct {
	Stream Stream
	// Lines are oldest first. A driver reads with the runtime's own filters (tail, since, the
	// After time) and hands every line it got here.
	Lines []RawLine
	// ReadLimited is set when the read stopped at MaxReadBytes: the last line may be cut.
	ReadLimited bool
	// WindowFull is set when the read returned as many lines as the tail it asked for, so lines
	// before the first one may exist that were not read.
	WindowFull bool
	// After is the position of the previous page of this view; nil for a first page.
	After *Position
	// MinLevel drops lines below it ("" keeps all); unknown-level lines, gaps and withheld counts
	// always stay.
	MinLevel string
	// Known are Secret values the runtime was given; they are masked wherever they appear.
	Known []string
	// PEMOpen is set when the previous page of this view ended inside a PEM block.
	PEMOpen bool
}

// Page is the sanitized result of one read.
type Page struct {
	Records  []Record
	Withheld int
	// Truncated is set when a byte limit cut the page.
	Truncated bool
	// Next is the position after the last line read, for the next page of the view.
	Next Position
	// PEMOpen is set when the page ended inside a PEM block.
	PEMOpen bool
}

// Build classifies, redacts and bounds the lines of in, skips what the previous page already
// showed, and labels every loss it can see. It is the only producer of line records.
func Build(in Input) Page {
	b := builder{in: in, stream: in.Stream, pemOpen: in.PEMOpen}
	lines := in.Lines
	after := in.After
	if after != nil && (after.PodUID != in.Stream.PodUID || after.Container != in.Stream.Container ||
		after.RestartCount != in.Stream.RestartCount) {
		b.gap(GapStreamReplaced, firstTime(lines))
		after, b.pemOpen = nil, false
	}
	if in.ReadLimited && len(lines) > 0 {
		// The read stopped inside the last line; it may end in the middle of a token.
		lines = lines[:len(lines)-1]
	}
	atStop := 0 // lines read so far stamped with the previous page's stop time
	for i, l := range lines {
		if after != nil && !l.Time.IsZero() && !l.Time.After(after.Time) {
			// Older than the stop, or one of the after.AtTime lines stamped with its time.
			if l.Time.Before(after.Time) {
				continue
			}
			if atStop++; atStop <= after.AtTime {
				continue
			}
		}
		if after != nil && i == 0 && in.WindowFull {
			b.gap(GapWindowExceeded, timePtr(l.Time))
		}
		if !b.add(l) {
			b.flush()
			b.gap(GapTruncated, timePtr(l.Time))
			b.page.Truncated = true
			// The next page of the view starts with the first line this one could not hold.
			lines = lines[:i]
			break
		}
	}
	b.flush()
	if in.ReadLimited && !b.page.Truncated {
		b.gap(GapTruncated, lastTime(lines))
		b.page.Truncated = true
	}
	b.page.Next = nextPosition(in.Stream, lines, after)
	b.page.PEMOpen = b.pemOpen
	return b.page
}

// nextPosition is the stop of a page that read lines: the newest time among them and how many
// carry it. The read starts at or before the previous stop, so it holds every line stamped with
// the stop's time again.
func nextPosition(stream Stream, lines []RawLine, after *Position) Position {
	next := Position{PodUID: stream.PodUID, Container: stream.Container, RestartCount: stream.RestartCount}
	if after != nil {
		next.Time, next.AtTime = after.Time, after.AtTime
	}
	var newest time.Time
	n := 0
	for _, l := range lines {
		switch {
		case l.Time.IsZero():
		case l.Time.Equal(newest):
			n++
		case l.Time.After(newest):
			newest, n = l.Time, 1
		}
	}
	switch {
	case newest.IsZero() || newest.Before(next.Time):
	case newest.Equal(next.Time):
		next.AtTime = max(n, next.AtTime)
	default:
		next.Time, next.AtTime = newest, n
	}
	return next
}

type builder struct {
	in      Input
	stream  Stream
	page    Page
	run     *Record // the open run of withheld lines
	bytes   int
	pemOpen bool
}

func (b *builder) gap(reason string, t *time.Time) {
	b.page.Records = append(b.page.Records, Gap(reason, b.stream, t))
}

func (b *builder) flush() {
	if b.run != nil {
		b.page.Records = append(b.page.Records, *b.run)
		b.run = nil
	}
}

func (b *builder) withhold(reason string, t *time.Time) {
	b.page.Withheld++
	if b.run != nil && b.run.Reason == reason {
		b.run.Count++
		return
	}
	b.flush()
	b.run = &Record{Type: TypeWithheld, Time: t, Stream: b.stream, Count: 1, Reason: reason, sanitized: true}
}

// add appends l; it reports false when the page has no room left for it.
func (b *builder) add(l RawLine) bool {
	t := timePtr(l.Time)
	c := classify(l.Text)
	// A PEM block printed over several lines is masked from its BEGIN line through its END line.
	if c.withheld == "" && (b.pemOpen || strings.Contains(c.message, pemBegin)) {
		lastBegin, lastEnd := strings.LastIndex(c.message, pemBegin), strings.LastIndex(c.message, pemEnd)
		b.pemOpen = lastBegin > lastEnd || (b.pemOpen && lastEnd < 0)
		c.message = "[redacted:pem]"
	}
	if c.withheld != "" {
		b.withhold(c.withheld, t)
		return true
	}
	if b.in.MinLevel != "" && c.level != LevelUnknown && levelRank[c.level] < levelRank[b.in.MinLevel] {
		return true
	}
	msg, cut := Clean(c.message, b.in.Known, MaxMessageBytes)
	if b.bytes+len(msg) > MaxPageBytes {
		return false
	}
	b.bytes += len(msg)
	rec := Record{Type: TypeLine, Time: t, Stream: b.stream, ContentClass: "operational", Kind: c.kind,
		Level: c.level, Message: msg, Truncated: cut, sanitized: true}
	if c.subsystem != "" {
		rec.Subsystem, _ = Clean(c.subsystem, b.in.Known, MaxFieldBytes)
	}
	for k, v := range c.fields {
		if s, ok := v.(string); ok {
			v, _ = Clean(s, b.in.Known, MaxFieldBytes)
		}
		if rec.Fields == nil {
			rec.Fields = map[string]any{}
		}
		rec.Fields[k] = v
	}
	b.flush()
	b.page.Records = append(b.page.Records, rec)
	return true
}

const pemBegin, pemEnd = "-----BEGIN ", "-----END "

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func firstTime(lines []RawLine) *time.Time {
	if len(lines) == 0 {
		return nil
	}
	return timePtr(lines[0].Time)
}

func lastTime(lines []RawLine) *time.Time {
	if len(lines) == 0 {
		return nil
	}
	return timePtr(lines[len(lines)-1].Time)
}
