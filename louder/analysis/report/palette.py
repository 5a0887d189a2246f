"""The one palette of the report's figures: Okabe & Ito's eight colours (2008, "Color Universal Design"),
told apart by readers with any common colour-vision deficiency, and the roles louder gives them. Every
figure takes its colours from here (``tests/test_figures.py`` holds them to it); a sequence of series
(models, attributes, conditions) takes ``SERIES`` in order. Nothing here imports matplotlib."""

from __future__ import annotations

BLACK, ORANGE, SKY, GREEN, YELLOW, BLUE, VERMILLION, PURPLE = (
    "#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")
GREY, LIGHT, GRID, WHITE = "#7F7F7F", "#BBBBBB", "#EEEEEE", "#FFFFFF"  # neutral marks, faint guides, grid lines

OKABE_ITO = (BLACK, ORANGE, SKY, GREEN, YELLOW, BLUE, VERMILLION, PURPLE)
SERIES = (BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, YELLOW, BLACK)  # yellow late: faint on white

IMPLICIT, EXPLICIT, BELIEF, OBSERVED = VERMILLION, BLUE, SKY, BLACK
SIGNIFICANT, NOT_SIGNIFICANT = VERMILLION, GREY
UP, DOWN, NEUTRAL = VERMILLION, BLUE, GREY  # raises / widens, lowers / narrows, no change
ALLOWED = frozenset({*OKABE_ITO, GREY, LIGHT, GRID, WHITE})


def series(i: int) -> str:
    """The i-th colour of a sequence of series (wraps after eight)."""
    return SERIES[i % len(SERIES)]
