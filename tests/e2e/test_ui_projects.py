"""Projects in the browser: the sidebar grouped by project (collapsible), creating,
renaming and deleting a project, moving a conversation by its menu and by dragging, a
project's instructions and file in Model view and in the request, and deleting a
project without losing a conversation."""

from __future__ import annotations

import base64

from playwright.sync_api import expect

from foldline.testing.sample_files import pdf, png

SPEC = "The bridge span is 417 metres."


def _group(page, name):  # type: ignore[no-untyped-def]
    return page.locator(".project-group", has=page.locator(".project-name", has_text=name))


def test_sort_conversations_into_projects_by_menu_and_by_dragging(ui):
    app = ui.app
    bridge = app.api("POST", "/api/projects", {"name": "Bridge"})
    app.api("POST", "/api/projects", {"name": "Tunnel"})
    ids = [app.create_conversation(f"Talk {n}")["id"] for n in range(4)]
    app.api("PATCH", f"/api/conversations/{ids[0]}", {"projectId": bridge["id"]})
    ui.open()
    page = ui.page

    # Groups by name, then "No project".
    expect(page.locator(".project-group .project-name")).to_have_text(
        ["Bridge", "Tunnel", "No project"]
    )
    expect(_group(page, "Bridge").locator(".conversation-item")).to_have_count(1)
    expect(_group(page, "No project").locator(".conversation-item")).to_have_count(3)

    # Move by the conversation's menu.
    item = _group(page, "No project").locator(".conversation-item", has_text="Talk 1")
    item.hover()
    item.get_by_role("button", name="Move to project").click()
    page.locator("#move-dialog").get_by_role("button", name="Tunnel").click()
    expect(_group(page, "Tunnel").locator(".item-title")).to_have_text(["Talk 1"])
    assert app.api("GET", f"/api/conversations/{ids[1]}")["projectId"] is not None

    # Move by dragging onto a group.
    dragged = _group(page, "No project").locator(".conversation-item", has_text="Talk 2")
    dragged.drag_to(_group(page, "Bridge").locator(".project-head"))
    expect(_group(page, "Bridge").locator(".conversation-item")).to_have_count(2)
    assert app.api("GET", f"/api/conversations/{ids[2]}")["projectId"] == bridge["id"]
    # And back out to "No project".
    back = _group(page, "Bridge").locator(".conversation-item", has_text="Talk 0")
    back.drag_to(_group(page, "No project").locator(".project-head"))
    expect(_group(page, "No project").locator(".conversation-item")).to_have_count(2)
    ui.shot("projects-sidebar")

    # Move the open conversation by the ⋯ menu.
    _group(page, "No project").locator(".conversation-item", has_text="Talk 3").click()
    expect(page.locator("#conversation-title")).to_have_text("Talk 3")
    page.locator("#more-button").click()
    page.get_by_role("menuitem", name="Move to project…").click()
    page.locator("#move-dialog").get_by_role("button", name="Tunnel").click()
    expect(_group(page, "Tunnel").locator(".item-title")).to_have_text(["Talk 3", "Talk 1"])
    assert app.api("GET", f"/api/conversations/{ids[3]}")["projectId"] is not None

    # Collapsing hides a group's conversations, and survives a reload.
    _group(page, "Bridge").locator(".project-toggle").click()
    expect(_group(page, "Bridge").locator(".conversation-item")).to_have_count(0)
    expect(_group(page, "Bridge").locator(".project-toggle")).to_have_attribute(
        "aria-expanded", "false"
    )
    ui.open()
    expect(_group(page, "Bridge").locator(".conversation-item")).to_have_count(0)
    _group(page, "Bridge").locator(".project-toggle").click()
    expect(_group(page, "Bridge").locator(".conversation-item")).to_have_count(1)


def test_create_rename_and_fill_a_project_then_see_it_in_model_view(ui, tmp_path):
    ui.open()
    page = ui.page
    page.locator("#new-project").click()
    page.locator("dialog[open] input").fill("Bridge")
    page.locator("dialog[open]").get_by_role("button", name="Create").click()
    dialog = page.locator("#project-dialog")
    expect(dialog).to_be_visible()
    dialog.locator("#project-instructions").fill("Always name the codename HERON.")
    spec = tmp_path / "bridge.md"
    spec.write_text(SPEC)
    with page.expect_file_chooser() as chooser:
        dialog.locator("#project-add-file").click()
    chooser.value.set_files(str(spec))
    expect(dialog.locator(".project-files")).to_contain_text("bridge.md")
    # A PDF, as a message takes it: the model reads its text, page by page.
    loads = tmp_path / "loads.pdf"
    loads.write_bytes(pdf(["Load table", "Design load: 9.6 kN per square metre"]))
    with page.expect_file_chooser() as chooser:
        dialog.locator("#project-add-file").click()
    chooser.value.set_files(str(loads))
    pdf_row = dialog.locator(".project-files li", has_text="loads.pdf")
    expect(pdf_row).to_contain_text("2 pages")
    # An image is refused with a visible notice saying why, and nothing is added.
    photo = tmp_path / "photo.png"
    photo.write_bytes(png(16, 16))
    ui.allow("422")
    with page.expect_file_chooser() as chooser:
        dialog.locator("#project-add-file").click()
    chooser.value.set_files(str(photo))
    notice = page.locator(".notice, .toast").filter(has_text="photo.png")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("a project takes no images")
    expect(dialog.locator(".project-files li")).to_have_count(2)
    # The notice is above the modal dialog (readable, not under its backdrop).
    box = notice.bounding_box()
    assert box is not None
    on_top = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y)?.closest('.notice') !== null",
        [box["x"] + box["width"] / 2, box["y"] + 12],
    )
    assert on_top
    ui.shot("projects-dialog")
    notice.get_by_role("button", name="Dismiss").click()
    expect(notice).to_have_count(0)
    expect(dialog).to_be_visible()
    # A notice shown while the dialog is open survives its closing, back in the page.
    ui.allow("422")
    with page.expect_file_chooser() as chooser:
        dialog.locator("#project-add-file").click()
    chooser.value.set_files(str(photo))
    expect(notice).to_be_visible()
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_have_count(0)
    expect(notice).to_be_visible()
    assert page.evaluate("() => document.getElementById('notices').parentElement === document.body")
    notice.get_by_role("button", name="Dismiss").click()

    # Rename from the group's header.
    head = _group(page, "Bridge").locator(".project-head")
    head.hover()
    head.get_by_role("button", name="Rename project").click()
    page.locator("dialog[open] input").fill("Bridge works")
    page.locator("dialog[open]").get_by_role("button", name="Save").click()
    expect(page.locator(".project-group .project-name").first).to_have_text("Bridge works")

    # "+" on the project starts a conversation in it; the request carries the project.
    head = _group(page, "Bridge works").locator(".project-head")
    head.hover()
    head.get_by_role("button", name="New conversation in this project").click()
    expect(page.locator("#composer-input")).to_have_attribute(
        "placeholder", "New conversation in “Bridge works”…"
    )
    ui.send("How long is the span?")
    expect(_group(page, "Bridge works").locator(".conversation-item")).to_have_count(1)
    request = [r for r in ui.app.fake.requests if not r.is_summary][-1]
    system = request.body["messages"][0]["content"]
    assert system.startswith("Always name the codename HERON.") and SPEC in system
    assert (
        '<file name="loads.pdf" media-type="application/pdf" pages="2">\n[page 1]\nLoad table'
        "\n\n[page 2]\nDesign load: 9.6 kN per square metre\n</file>"
    ) in system

    page.locator("#model-view-button").click()
    shared = page.locator(".mv-item.project")
    expect(shared).to_contain_text("Bridge works")
    expect(shared).to_contain_text("bridge.md")
    expect(shared).to_contain_text("loads.pdf")
    expect(shared).to_contain_text("Always name the codename HERON.")
    expect(page.locator(".mv-item.system").last).to_contain_text("417 metres")
    ui.shot("projects-model-view")

    # A note pinned to the project shows at once in the open conversation's Model view.
    head = _group(page, "Bridge works").locator(".project-head")
    head.hover()
    head.get_by_role("button", name="Instructions, files and notes").click()
    dialog = page.locator("#project-dialog")
    dialog.get_by_placeholder("Note title").fill("Deadline")
    dialog.get_by_placeholder("The note, sent verbatim").fill("Drawings are due in March.")
    dialog.locator("#project-add-note").click()
    expect(dialog.locator(".project-notes")).to_contain_text("Deadline")
    dialog.get_by_role("button", name="Close", exact=True).last.click()
    expect(shared).to_contain_text("Pinned notes: Deadline")
    expect(page.locator(".mv-item.system").last).to_contain_text("Drawings are due in March.")


def test_deleting_a_project_keeps_or_deletes_its_conversations_as_confirmed(ui):
    app = ui.app
    keep = app.api("POST", "/api/projects", {"name": "Keep"})
    drop = app.api("POST", "/api/projects", {"name": "Drop"})
    kept = [app.create_conversation(f"Kept {n}")["id"] for n in range(2)]
    dropped = [app.create_conversation(f"Dropped {n}")["id"] for n in range(3)]
    for conversation in kept:
        app.send(conversation, "hello")
        app.api("PATCH", f"/api/conversations/{conversation}", {"projectId": keep["id"]})
    for conversation in dropped:
        app.api("PATCH", f"/api/conversations/{conversation}", {"projectId": drop["id"]})
    data = base64.b64encode(b"notes").decode()
    app.api("POST", f"/api/projects/{keep['id']}/files", {"name": "a.txt", "data": data})
    ui.open()
    page = ui.page

    # Deleting "Keep", keeping its conversations: they move to "No project", whole.
    head = _group(page, "Keep").locator(".project-head")
    head.hover()
    head.get_by_role("button", name="Delete project").click()
    dialog = page.locator("#delete-project-dialog")
    expect(dialog).to_contain_text("It holds 2 conversations")
    # The screenshot after the dialog's fade-in has finished.
    dialog.evaluate("(d) => Promise.all(d.getAnimations().map((a) => a.finished))")
    ui.shot("projects-delete")
    dialog.get_by_role("button", name="Delete project, keep conversations").click()
    expect(_group(page, "Keep")).to_have_count(0)
    expect(_group(page, "No project").locator(".conversation-item")).to_have_count(2)
    for conversation in kept:
        body = app.api("GET", f"/api/conversations/{conversation}")
        assert body["projectId"] is None and body["messageCount"] == 2

    # Deleting "Drop" with its conversations asks again, saying how many.
    head = _group(page, "Drop").locator(".project-head")
    head.hover()
    head.get_by_role("button", name="Delete project").click()
    page.locator("#delete-project-dialog").get_by_role(
        "button", name="Delete with its 3 conversations"
    ).click()
    confirm = page.locator("dialog[open]")
    expect(confirm).to_contain_text("Delete 3 conversations?")
    confirm.get_by_role("button", name="Cancel").click()
    assert len(app.api("GET", "/api/conversations")["items"]) == 5
    head.hover()
    head.get_by_role("button", name="Delete project").click()
    page.locator("#delete-project-dialog").get_by_role(
        "button", name="Delete with its 3 conversations"
    ).click()
    page.locator("dialog[open]").get_by_role("button", name="Delete 3 conversations").click()
    expect(page.locator(".conversation-item")).to_have_count(2)
    # No project left: the list is drawn as before, by day.
    expect(page.locator(".project-group")).to_have_count(0)
    assert app.api("GET", "/api/projects")["items"] == []
