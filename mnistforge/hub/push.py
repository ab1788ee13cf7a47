"""Upload an exported folder to the Hugging Face Hub (checked first; nothing sent on failure)."""
from __future__ import annotations

import re

from .. import settings
from ..errors import ConfigError, UploadError
from ..io.hf.parquet import DATA
from ..io.hf.repo import CARD, repo_configs
from ..io.types import StrPath
from .check import verify_repo
from .croissant import CROISSANT

def push_to_hub(repo_dir: StrPath, repo_id: str, *, token: str | None = None, private: bool = False,
                endpoint: str | None = None, check: bool = True, commit_message: str | None = None) -> str:
    """Upload an exported folder to the Hub as dataset ``repo_id`` (``ORG/NAME``).

    The folder is checked first (:func:`verify_repo`); nothing is uploaded if a check fails, if no token is found
    (``token``, ``HF_TOKEN`` or ``huggingface-cli login``) or if the Hub is unreachable (the first request creates the
    repository and fails before any file is sent).  ``endpoint`` defaults to ``HF_ENDPOINT`` or the public Hub.

    Returns the commit URL.
    """
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo_id or ""):
        raise ConfigError("invalid Hub repository id", expected="ORG/NAME", found=repr(repo_id))
    if check:
        verify_repo(repo_dir)
    try:
        import huggingface_hub
        from huggingface_hub import HfApi
    except ImportError as e:  # pragma: no cover - installed with datasets
        raise UploadError("huggingface_hub is not installed", expected="huggingface_hub",
                          found="nothing", hint="pip install 'mnistforge[hub]'") from e
    offline = settings.current().hf_offline or getattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    if offline:
        raise UploadError("Hugging Face Hub offline mode is on (HF_HUB_OFFLINE): nothing uploaded",
                          path=repo_dir, hint="unset HF_HUB_OFFLINE to push")
    token = settings.current(hf_token=token).hf_token or huggingface_hub.get_token()
    if not token:
        raise UploadError("no Hugging Face token: nothing uploaded", path=repo_dir,
                          expected="a token in HF_TOKEN or from `hf auth login`", found="none",
                          hint="set HF_TOKEN=hf_... (write access to the target organisation)")
    endpoint = settings.current(hf_endpoint=endpoint).hf_endpoint
    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        info = api.upload_folder(
            folder_path=str(repo_dir), repo_id=repo_id, repo_type="dataset",
            commit_message=commit_message or f"mnistforge export ({', '.join(repo_configs(repo_dir))})",
            allow_patterns=[CARD, CROISSANT, f"{DATA}/**"],
        )
    except Exception as e:  # noqa: BLE001 - network/HTTP errors come in many types
        raise UploadError(f"upload to {repo_id} failed: {type(e).__name__}: {e}",
                          path=repo_dir, hint="check the network, the token's write access and "
                          "the repository name; the local folder is intact") from e
    return str(getattr(info, "commit_url", info))
