// Package agent hands a conversation from one agent to another: an agent
// is a route (often a //chat:ai service's route), and a hand-off makes
// another route answer the same user message, now and for the requests
// that follow, seeing of the conversation so far what the hand-off's
// [Input] chooses — nothing, a summary, the last turns or all of it, as
// the OpenAI Agents SDK's input filters do. [Handoffs.HandBack] returns
// to the agent that handed off, likewise.
//
// A [Handoffs] keeps, in a durable chat-scoped bean, what each agent was
// given, the hand-back chain and the history of hand-offs: a durable
// conversation resumed on another router keeps them. Its
// [Handoffs.ModelHook], in the ai.Config of every agent, records what the
// agent answering now sees (the source of the next hand-off's input) and
// puts the given input into the prompt of the agent handed to, right
// after the system message, where it stays stable from call to call.
//
// The client is told which agent answers by an Agent event ([Event]).
package agent
