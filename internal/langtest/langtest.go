// Package langtest finds English prose in text that should hold none: the prompt texts of a
// zh session. Tests use it to prove that no English sentence written in Go (or left
// untranslated in a skill) reaches a model that was asked to answer in Chinese, and
// package skills refuses an admin's zh prompt version that holds one. Code,
// identifiers, tags, placeholders, URLs and names in capitals are not prose and are left
// alone, so tool names, artifact fields, JSON and tickers may appear freely.
package langtest

import (
	"regexp"
	"strings"
)

// MinWords is how many English words in a row make a sentence. Three-word names
// ("JSON merge patch") are fine; a clause of four words is not.
const MinWords = 4

// nonProse matches what is removed before looking: fenced blocks, inline code, tags,
// comments, {{placeholders}}, URLs and e-mail addresses.
var nonProse = regexp.MustCompile("(?s)```.*?```|`[^`\n]*`|<!--.*?-->|</?[A-Za-z][^<>\n]*>|\\{\\{[^{}]*\\}\\}|https?://\\S+|www\\.\\S+|\\S+@\\S+")

// EnglishRuns returns every run of MinWords or more English prose words in text, words
// separated only by spaces, commas or hyphens. A word that is part of an identifier
// (run_backtest, SMA20, strategy.v1) or written in capitals (BTC, JSON) ends a run.
func EnglishRuns(text string) []string {
	text = nonProse.ReplaceAllString(text, "\n")
	var runs []string
	var run []string
	flush := func() {
		if len(run) >= MinWords {
			runs = append(runs, strings.Join(run, " "))
		}
		run = run[:0]
	}
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case isLetter(c):
			j := i
			for j < len(text) && (isLetter(text[j]) || text[j] == '\'') {
				j++
			}
			word := text[i:j]
			if identifierAt(text, i, j) || isCaps(word) {
				flush()
			} else {
				run = append(run, word)
			}
			i = j
		case c == ' ' || c == '\t' || c == ',' || c == '-':
			i++
		default:
			flush()
			i++
		}
	}
	flush()
	return runs
}

// identifierAt reports whether the word text[i:j] touches an underscore, a digit, or a dot,
// slash or colon followed by a letter or digit: it belongs to an identifier.
func identifierAt(text string, i, j int) bool {
	if i > 0 && strings.IndexByte("_0123456789./:", text[i-1]) >= 0 {
		return true
	}
	if j < len(text) {
		switch c := text[j]; {
		case c == '_' || ('0' <= c && c <= '9'):
			return true
		case (c == '.' || c == '/' || c == ':') && j+1 < len(text) && isAlnum(text[j+1]):
			return true
		}
	}
	return false
}

func isCaps(w string) bool {
	if len(w) < 2 {
		return false
	}
	return strings.ToUpper(w) == w
}

func isLetter(c byte) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }

func isAlnum(c byte) bool { return isLetter(c) || ('0' <= c && c <= '9') }
