"""Agents as first-class pages: the agents list, an agent's page, its A2A agent card and
who delegates to whom (a feature: reads the mirror, writes only agent cards)."""
