package main

import (
	"strings"
	"testing"
)

func TestBoundedRead(t *testing.T) {
	for args, want := range map[string]bool{
		"ZRANGE k + - BYLEX REV LIMIT 0 25":     true,
		"ZRANGE k 5/x 5 BYSCORE REV":            false,
		"ZRANGE k 17 17 BYSCORE REV WITHSCORES": true,
		"ZRANGE k 0 -1":                         false,
		"ZRANGE k 0 0":                          true,
		"ZRANGE k 10 5000":                      false,
		"ZRANGEBYSCORE k -inf +inf":             false,
		"ZREVRANGEBYLEX k + - LIMIT 0 10":       true,
		"KEYS *":                                false,
		"SMEMBERS s":                            false,
		"ZCARD k":                               true,
		"HMGET k a b":                           true,
	} {
		if got := boundedRead(split(args)); got != want {
			t.Errorf("boundedRead(%s) = %v, want %v", args, got, want)
		}
	}
}

func split(s string) []string { return strings.Fields(s) }
