"""What launches runs: sweeps, worker-count scaling, profiles, generalisation scoring, the torchrun launcher."""
