"""One question run: the agent invoked (`runner`, `conversation`, `messages`, `world`), its
answer graded (`grading`), its cost counted (`accounting`), its record finished."""
