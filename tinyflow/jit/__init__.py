"""Dynamic to static: to_static, InputSpec, saving and loading programs (Paddle's @to_static)."""
