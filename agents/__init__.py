"""Trainable RL policies (stable-baselines3 / sb3-contrib) that learn in the same environment."""
