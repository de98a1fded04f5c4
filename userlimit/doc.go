// Package userlimit keeps one user from taking what all users share, every per-user limit
// in one place: [Turns] caps the generations a user runs at once, [Rate] how fast a user
// posts messages (and answers from phones), [Meter] the model calls a user makes a day,
// and [Streams] the event streams a user holds open on a replica. The first three are
// checked against what every replica does (the user's generations running elsewhere, the
// allowances and counts kept in the database); all answer at once and never queue, and
// what they hold in memory is bounded by what runs here.
package userlimit
