"""Names shared by the harness (conftest) and the tests: reward types, score keys, the token variable."""

from __future__ import annotations

TOKEN_ENV = "RK_COSMOS_TEST_TOKEN"
VIDEO_TYPE = "rk_brightness_video"
IMAGE_TYPE = "rk_brightness_image"
VIDEO_KEYS = ["overall_reward", "vq_reward", "mq_reward", "ta_reward"]
