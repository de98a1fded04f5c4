// Package userlimit keeps one user from taking what all users share: [Turns] caps the
// generations a user runs at once, [Rate] caps how fast a user posts messages (a token
// bucket per user, golang.org/x/time/rate). Both answer at once, never queue, and both hold
// memory bounded by a stated rule, so the limits themselves cannot be used to exhaust the
// server.
package userlimit
