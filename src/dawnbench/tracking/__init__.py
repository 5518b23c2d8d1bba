"""A script's own training loop recorded as a dawnbench run: :func:`track` (tracker.py); callbacks for Hugging
Face's Trainer and PyTorch Lightning build on it (:mod:`dawnbench.integrations`)."""

from dawnbench.tracking.tracker import PROFILE_ENV, Tracker, track

__all__ = ["PROFILE_ENV", "Tracker", "track"]
