// Package userlimit keeps one user from taking what all users share: [Turns] caps the
// generations a user runs at once, [Rate] caps how fast a user posts messages. Both are
// checked against what every replica does (the user's generations running elsewhere, the
// allowance kept in the database), answer at once and never queue; what they hold in
// memory is bounded by the generations running here.
package userlimit
