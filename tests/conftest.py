"""Shared fixtures: one local Ray instance for the whole test session (Ray takes seconds to
start), shut down at the end."""

import pytest


@pytest.fixture(scope="session")
def ray_session():
    import ray

    from tuner.orchestrator import LOCAL_RAY_SYSTEM_CONFIG

    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True,
             log_to_driver=False, configure_logging=False, _system_config=LOCAL_RAY_SYSTEM_CONFIG)
    yield ray
    ray.shutdown()
