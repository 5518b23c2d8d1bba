"""Figures and pages made from measured results (PNG plots, HTML reports)."""
