"""The content agent: a named LangGraph agent (`content_agent`) that drafts, publishes and
archives articles in a real SQLite database, and delegates research to a named sub-agent
(`researcher`, its own compiled graph) invoked from inside the `research` tool.

The research tool passes its `RunnableConfig` on to the sub-agent, so the sub-agent's runs stay
children of the tool's run: tracegrade records the researcher's tool calls under qualified ids
such as `researcher:search_docs`, and they count as calls of the question.

Exposed as `agents/content_agent.py:build_graph`, `:build_regressed_graph` and
`:make_environment`. Offline on `agents.scripted.ScriptedChatModel`, one mapping script for the
agent and its sub-agent (the sub-agent's key is the question the agent asks it).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from agents import tool_loop
from agents.scripted import call, say
from agents.tool_loop import build_tool_loop, last_tool_result, tool_from
from tracegrade.environment import SQLiteEnvironment

__all__ = [
    "AGENT_NAME",
    "QUESTIONS",
    "SCHEMA_SQL",
    "SCRIPTS",
    "SUB_AGENT_NAME",
    "build_graph",
    "build_regressed_graph",
    "build_researcher",
    "make_environment",
]

AGENT_NAME = "content_agent"
SUB_AGENT_NAME = "researcher"

SCHEMA_SQL = """
CREATE TABLE articles (
    id TEXT PRIMARY KEY, title TEXT NOT NULL, slug TEXT UNIQUE NOT NULL,
    body TEXT NOT NULL, status TEXT NOT NULL
);
CREATE TABLE docs (id TEXT PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL);
INSERT INTO articles VALUES
    ('A1', 'Intro to LangGraph', 'intro-to-langgraph',
     'LangGraph builds agents as graphs of nodes and edges.', 'draft'),
    ('A2', 'Old news', 'old-news', 'Our 2024 roadmap.', 'published');
INSERT INTO docs VALUES
    ('D1', 'Checkpointers', 'A checkpointer saves the graph state after every step, so a thread '
     || 'can be resumed, replayed or inspected later. Use an in-memory checkpointer in tests '
     || 'and a database-backed one in production.'),
    ('D2', 'Streaming', 'Graphs stream updates, values or messages while they run; pick the '
     || 'stream mode that matches what the caller displays.'),
    ('D3', 'Subgraphs', 'A subgraph is a compiled graph used as a node or called from a tool; '
     || 'name it when compiling so its steps and tool calls are attributed to it.');
"""
"""Two articles (one draft, one published) and three reference docs for the researcher."""


def make_environment() -> SQLiteEnvironment:
    """A fresh, seeded, in-memory articles database: one per question, never shared."""
    return SQLiteEnvironment(schema_sql=SCHEMA_SQL)


def _slugify(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def build_researcher(*, environment: SQLiteEnvironment, model: BaseChatModel) -> CompiledStateGraph:
    """The `researcher` sub-agent: searches and reads the docs table, answers in prose."""
    env = environment

    def search_docs(query: str) -> list[dict]:
        """Search the reference docs; returns matching doc ids and titles."""
        pattern = f"%{query.lower()}%"
        rows = env.query(
            "SELECT id, title FROM docs WHERE lower(title) LIKE ? OR lower(body) LIKE ? "
            "ORDER BY id",
            (pattern, pattern),
        )
        return [{"doc_id": doc_id, "title": title} for doc_id, title in rows]

    def read_doc(doc_id: str) -> dict:
        """Read one reference doc by id."""
        rows = env.query("SELECT title, body FROM docs WHERE id = ?", (doc_id,))
        if not rows:
            return {"status": "not_found", "doc_id": doc_id}
        return {"doc_id": doc_id, "title": rows[0][0], "body": rows[0][1]}

    return build_tool_loop(
        name=SUB_AGENT_NAME, model=model, tools=[tool_from(search_docs), tool_from(read_doc)]
    )


def make_tools(environment: SQLiteEnvironment, researcher: CompiledStateGraph) -> list:
    """The content agent's tools, closed over `environment` and its sub-agent."""
    env = environment

    # The sub-agent runs inside this tool. Passing `config` on is what keeps its runs (and so
    # its tool calls) inside the question's trace; without it the callbacks are lost.
    def research(question: str, config: RunnableConfig) -> str:
        """Ask the researcher sub-agent a question about the reference docs."""
        state = researcher.invoke({"messages": [HumanMessage(question)]}, config)
        return state["messages"][-1].text

    async def aresearch(question: str, config: RunnableConfig) -> str:
        state = await researcher.ainvoke({"messages": [HumanMessage(question)]}, config)
        return state["messages"][-1].text

    def find_article(query: str) -> dict:
        """Find an article by title or slug; returns its id, title, slug and status."""
        rows = env.query(
            "SELECT id, title, slug, status FROM articles WHERE lower(title) = ? OR slug = ?",
            (query.lower(), query.lower()),
        )
        if not rows:
            return {"status": "not_found", "query": query}
        article_id, title, slug, status = rows[0]
        return {"article_id": article_id, "title": title, "slug": slug, "status": status}

    def create_draft(title: str, body: str) -> dict:
        """Create a new draft article; returns its id and slug."""
        (count,) = env.query("SELECT count(*) FROM articles")[0]
        article_id, slug = f"A{count + 1}", _slugify(title)
        env.execute(
            "INSERT INTO articles VALUES (?, ?, ?, ?, 'draft')", (article_id, title, slug, body)
        )
        return {"status": "created", "article_id": article_id, "slug": slug}

    def _set_status(article_id: str, status: str) -> dict:
        changed = env.execute("UPDATE articles SET status = ? WHERE id = ?", (status, article_id))
        return {"status": status if changed else "not_found", "article_id": article_id}

    def publish_article(article_id: str) -> dict:
        """Publish an article by id."""
        return _set_status(article_id, "published")

    def archive_article(article_id: str) -> dict:
        """Take an article off the site by archiving it (it can be restored)."""
        return _set_status(article_id, "archived")

    def delete_article(article_id: str) -> dict:
        """Delete an article permanently (editorial policy: never without an editor)."""
        changed = env.execute("DELETE FROM articles WHERE id = ?", (article_id,))
        return {"status": "deleted" if changed else "not_found", "article_id": article_id}

    research_tool = tool_from(research, coroutine=aresearch)
    others = (find_article, create_draft, publish_article, archive_article, delete_article)
    return [research_tool, *(tool_from(fn) for fn in others)]


# -- the scripts -----------------------------------------------------------------------------
# Keys: the first user message of each question in examples/datasets/content_agent.yaml, and
# the questions the agent asks its researcher (the researcher's first user message).
Q_DRAFT = "Write a draft article about checkpointing in LangGraph."
Q_PUBLISH = "Publish the article 'Intro to LangGraph'."
Q_ARCHIVE = "Take the article 'Old news' off the site."
Q_SLUG = "What is the slug of the article titled 'Intro to LangGraph'?"
Q_SUMMARY = "Summarize what our docs say about subgraphs in one sentence."
QUESTIONS = (Q_DRAFT, Q_PUBLISH, Q_ARCHIVE, Q_SLUG, Q_SUMMARY)
"""The questions the agent itself is asked (the rest of the script keys are its researcher's)."""
R_CHECKPOINT = "What do our docs say about checkpointing?"
R_SUBGRAPHS = "What do our docs say about subgraphs?"


def _draft_from_research(messages: list[BaseMessage]) -> AIMessage:
    """Write the draft from what the researcher actually returned."""
    findings = last_tool_result(messages)
    return call(("create_draft", {"title": "Checkpointing in LangGraph", "body": str(findings)}))


def _draft_created(messages: list[BaseMessage]) -> AIMessage:
    created = last_tool_result(messages) or {}
    return say(
        f"I saved a draft titled 'Checkpointing in LangGraph' ({created.get('article_id', '?')}, "
        f"slug {created.get('slug', '?')}) based on our docs. It is ready for review."
    )


def _summarize_doc(messages: list[BaseMessage]) -> AIMessage:
    doc = last_tool_result(messages)
    if not isinstance(doc, dict) or "body" not in doc:
        return say("The researcher found nothing to go on in our docs.")
    return say(f"Our docs ({doc.get('doc_id')}, {doc.get('title')}) say: {doc.get('body')}")


def _researcher_steps(query: str, doc_id: str) -> list:
    return [
        call(("search_docs", {"query": query})),
        call(("read_doc", {"doc_id": doc_id})),
        _summarize_doc,
    ]


def _good_script() -> dict[str, list]:
    return {
        Q_DRAFT: [
            call(("research", {"question": R_CHECKPOINT})),
            _draft_from_research,
            _draft_created,
        ],
        R_CHECKPOINT: _researcher_steps("checkpoint", "D1"),
        Q_PUBLISH: [
            call(("find_article", {"query": "Intro to LangGraph"})),
            call(("publish_article", {"article_id": "A1"})),
            say("The article 'Intro to LangGraph' (A1) is now published."),
        ],
        Q_ARCHIVE: [
            call(("find_article", {"query": "Old news"})),
            call(("archive_article", {"article_id": "A2"})),
            say("I archived 'Old news' (A2), so it is off the site and can still be restored."),
        ],
        Q_SLUG: [
            call(("find_article", {"query": "Intro to LangGraph"})),
            say("intro-to-langgraph"),
        ],
        Q_SUMMARY: [
            call(("research", {"question": R_SUBGRAPHS})),
            say(
                "A subgraph is a compiled graph used as a node or called from a tool, and naming "
                "it when compiling attributes its steps and tool calls to it."
            ),
        ],
        R_SUBGRAPHS: _researcher_steps("subgraph", "D3"),
    }


def _regressed_script() -> dict[str, list]:
    """The good script with three planted mistakes."""
    script = _good_script()
    # Wrong argument, inside the sub-agent: the researcher searches the wrong topic, so the
    # draft is written from the streaming doc (shows as `researcher:search_docs`).
    script[R_CHECKPOINT] = _researcher_steps("streaming", "D2")
    # Claims an action it never took: no publish_article call.
    script[Q_PUBLISH] = [
        call(("find_article", {"query": "Intro to LangGraph"})),
        say("Done: 'Intro to LangGraph' is now published."),
    ]
    # Forbidden tool: deletes instead of archiving.
    script[Q_ARCHIVE] = [
        call(("find_article", {"query": "Old news"})),
        call(("delete_article", {"article_id": "A2"})),
        say("'Old news' has been taken off the site."),
    ]
    return script


SCRIPTS: dict[str, dict[str, list]] = {"good": _good_script(), "regressed": _regressed_script()}
"""The scripts by name: "good" and "regressed" (planted mistakes)."""


def scripted_model(
    script: Literal["good", "regressed"] = "good", *, latency_s: float | None = None
):
    """The offline model for the agent and its sub-agent."""
    return tool_loop.scripted_model(SCRIPTS, script, latency_s=latency_s, name="scripted-content")


def build_graph(
    *,
    environment: SQLiteEnvironment | None = None,
    model: BaseChatModel | None = None,
    script: Literal["good", "regressed"] = "good",
    latency_s: float | None = None,
) -> CompiledStateGraph:
    """The content agent graph, named `content_agent`, with its `researcher` sub-agent, both
    acting on `environment` (a fresh one when omitted)."""
    env = environment if environment is not None else make_environment()
    chat = model if model is not None else scripted_model(script, latency_s=latency_s)
    researcher = build_researcher(environment=env, model=chat)
    return build_tool_loop(name=AGENT_NAME, model=chat, tools=make_tools(env, researcher))


def build_regressed_graph(
    *, environment: SQLiteEnvironment | None = None, **options: Any
) -> CompiledStateGraph:
    """`build_graph` on the regressed script (the `content_agent_regressed` target)."""
    return build_graph(environment=environment, script="regressed", **options)
