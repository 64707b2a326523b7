"""Search by meaning through a real server (issue 25), configured in `[search]` with the endpoint
provider and asking a stand-in `/v1/embeddings` server on 127.0.0.1 that computes real embeddings
with the bundled model: a question in other words finds the section that answers it, `notes_read`
accepts that section, the results say which model answered; when the endpoint fails, search still
answers by words and says why, and `notes_similar` says what is unavailable."""

from __future__ import annotations

import pytest

from tests.conftest import Deployment
from tests.embeddings_stand_in import StandIn, stand_in
from tests.wire.sdkclients import call, error_code, sdk_client

__all__ = ["stand_in"]  # the fixture
pytestmark = [pytest.mark.anyio, pytest.mark.resolves_files]

MANUAL = (
    "# House manual\n\nWhere things are in the flat.\n\n"
    "## Water\n\nThe stopcock is under the kitchen sink.\n\n"
    "## Rubbish\n\nThe green bin is emptied every Wednesday morning; put it out the night before.\n"
)


async def test_a_question_in_other_words_finds_the_section_notes_read_accepts(
    deployment: Deployment, stand_in: str
) -> None:
    (deployment.notes / "Home").mkdir()
    (deployment.notes / "Home" / "House manual.md").write_text(MANUAL)
    deployment.write_config(
        extra=f'[search]\nprovider = "endpoint"\nendpoint_url = "{stand_in}"\nmodel = "stand-in"\n'
    )
    ws = deployment.notes_uri
    question = {"workspaceUri": ws, "query": "which day is garbage collected"}
    async with sdk_client("stdio", deployment) as client:
        found = (await call(client, "notes_search", question)).structured_content
        assert found["ranking"]["by"] == "words_and_meaning", found["ranking"]
        assert found["ranking"]["model"] == f"endpoint:{stand_in.split('/')[2]}:stand-in"
        first = found["results"][0]
        assert (first["id"], first["foundBy"], first["section"]) == (
            "Home/House manual.md",
            "meaning",  # no word of the question is in the note
            "House manual > Rubbish",
        ), found["results"]
        assert "Wednesday" in first["snippet"]  # the start of the section that matched
        read = await call(
            client, "notes_read", {"workspaceUri": ws, "noteId": first["id"], "section": first["section"]}
        )
        assert (
            read.structured_content["body"].startswith("## Rubbish\n")
            and "Water" not in read.structured_content["body"]
        )
        assert StandIn.seen, "the server asked the stand-in"

        StandIn.fail = True  # the endpoint now answers 500
        down = (await call(client, "notes_search", question | {"query": "green bin"})).structured_content
        assert down["ranking"]["by"] == "words" and stand_in in down["ranking"]["reason"], down["ranking"]
        assert "500" in down["ranking"]["reason"]
        assert [h["id"] for h in down["results"]] == ["Home/House manual.md"]
        created = await call(
            client,
            "notes_create",
            {"workspaceUri": ws, "path": "Home/Bins.md", "title": "Bins", "body": "Green."},
        )
        assert not created.is_error  # writing never needs the model
        similar = await call(client, "notes_similar", {"workspaceUri": ws, "noteId": "Home/Bins.md"})
        assert error_code(similar) == "meaning_unavailable"  # its new note cannot be embedded now
        assert stand_in in similar.content[0].text
