"""The engine: a goal, a model, tools and their walls. Nothing here imports `hearth/`.

loop.py      Loop: query -> parse -> tools -> record, until done or capped
parsing/     reply text -> tool calls (JSON repair lives here and nowhere else)
model/       the only code that speaks to the model server
tools/       the Tool record, the kinds, the gate every call goes through
safety/      every wall: policy, command guard, workspace, sandbox, seccomp, redaction
net/         everything that leaves the box: the guard, the client, its proxy
knowledge/   the knowledge base and memory
context/     the system prompt, context files, compaction
"""
