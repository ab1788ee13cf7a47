"""cache: fetch official files (mirrors, resume), verify them against the registry, keep raw copies."""
