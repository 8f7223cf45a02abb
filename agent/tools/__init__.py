"""Tools grouped by kind; each module registers its tools in agent.hearth_tools.TOOLS on import."""
