// Package jsonskill runs JSON skills: LLM calls that must answer one object matching a
// schema, which a program then acts on (docs/json-skills.md). It is the second kind of work
// beside the streamed chat turn, on the same upstreams: the router, its failover before
// the first byte and its breakers.
//
// A skill is a folder of skills/json: skill.json (name, version, the input and output
// schemas, the call timeout, the rules it uses), and per locale its system prompt, user
// template, text-JSON hard rules and correction note. [Load] reads and compiles them once.
//
// One run, [Runner.Run], reads top to bottom:
//
//  1. The input is held to the skill's input schema ([Skill.CheckInput]).
//  2. A snapshot skill prepares its snapshot (package terminal) and, when the agent is
//     visibly at work, answers by the rules with no model call.
//  3. The model is asked: the system prompt and the rendered user template as two
//     messages, temperature 0, no tools, in the answering endpoint's output mode
//     (structured sends the output schema, text_json appends the hard rules), within the
//     call timeout.
//  4. The answer is read (one code fence stripped, the first complete object taken, text
//     around it marked repaired), held to the output schema, then to the skill's rules
//     (post_views: the reasoning must be Chinese, docs/json-skills.md).
//  5. A refused answer gets the run's one correction retry, naming what was wrong; a
//     second refusal fails the run. A snapshot answer that says the question is cut off is
//     asked again with a wider window (80, 150, 300, 500, 800 lines, then the whole
//     snapshot once): widening calls are not corrections. So a run makes at most six calls,
//     whatever its input.
//  6. The run is stored, succeeded or failed, with its meta; a question from a source that
//     asked it last, within the de-duplication window, is a duplicate.
//
// Jobs (package jsonskill/jobs) run many inputs through [Runner.Execute] and store each
// run with the job's progress.
package jsonskill
