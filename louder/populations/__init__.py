"""Populations: several sociodemographic groups at once, their joint distribution, and agents drawn from it.

A population file (YAML, see ``louder/data/populations/us_adults.yaml``) names its groups — built-in
ids, group files, or groups defined inline — and their distribution: either a joint table (CSV, one
row per combination with a count or weight) or per-group marginals, optionally with two-way tables.
``fit_population`` builds the joint distribution by iterative proportional fitting (humanleague.ipf);
``draw_agents`` turns it into N agents whose one-way marginals are right to within one agent
(humanleague.integerise + humanleague.qisi).
"""

from louder.populations.fit import FitDiagnostics, FittedPopulation, draw_agents, fit_diagnostics, fit_population
from louder.populations.persona import agent_description, describe_agent, persona_phrases
from louder.populations.schema import Population, builtin_populations, load_population

__all__ = ["FitDiagnostics", "FittedPopulation", "Population", "agent_description", "builtin_populations", "describe_agent",
           "draw_agents", "fit_diagnostics", "fit_population", "load_population", "persona_phrases"]
