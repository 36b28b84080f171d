"""The dashboard as a person uses it: headless Chromium opens each page against a live cluster, reads
what is shown, does the actions (create, change and delete a topic, reset offsets, search, send) and
saves a screenshot of each page."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from .conftest import BINARY_BODY, GROUP, SEND_TOPIC, TOPIC, Live


def test_the_cluster_page_shows_each_broker(live: Live, page: Page, screenshots: Path) -> None:
    page.goto(live.url)
    row = page.get_by_test_id("brokers").locator("tbody tr")
    expect(row).to_have_count(1)
    for shown in ("DefaultCluster", "broker-a", "MASTER", "V4_9_8", "%"):
        expect(row).to_contain_text(shown)
    expect(page.get_by_test_id("brokers").locator("th")).to_contain_text(["cluster", "broker", "role", "address"])
    page.screenshot(path=screenshots / "cluster.png")


def test_the_topics_page_lists_the_topic_and_its_queues(live: Live, page: Page, screenshots: Path) -> None:
    page.goto(live.url + "topics")
    row = page.get_by_test_id("topics").locator("tbody tr", has_text=TOPIC)
    expect(row.locator("td")).to_have_text([TOPIC, "2", "11", re.compile(r"measuring|\d+\.\d\d")])
    expect(page.get_by_test_id("topics")).not_to_contain_text("%RETRY%")  # system topics are hidden...
    page.get_by_role("link", name="show system topics").click()
    expect(page.get_by_test_id("topics")).to_contain_text(f"%RETRY%{GROUP}")  # ...until asked for
    page.screenshot(path=screenshots / "topics.png")

    page.get_by_role("link", name=TOPIC, exact=True).click()
    expect(page.locator("h1")).to_have_text(f"Topic {TOPIC}")
    queues = page.get_by_test_id("queues").locator("tbody tr")
    expect(queues).to_have_count(2)
    assert sum(int(queues.nth(i).locator("td").nth(3).inner_text()) for i in range(2)) == 11  # max offsets
    expect(page.get_by_role("link", name=GROUP)).to_be_visible()
    page.screenshot(path=screenshots / "topic.png")


def test_create_change_and_delete_a_topic(live: Live, page: Page, screenshots: Path) -> None:
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(live.url + "topics")
    page.get_by_label("Topic", exact=True).fill("DashNew")
    page.get_by_label("Read queues").fill("2")
    page.get_by_label("Write queues").fill("2")
    page.get_by_role("button", name="Create topic").click()
    expect(page.locator(".notice")).to_contain_text("Topic DashNew created on 1 broker(s).")
    expect(page.get_by_test_id("route").locator("tbody td")).to_have_text(["broker-a", "2", "2", "RW (6)"])

    page.get_by_label("Read queues").fill("3")
    page.get_by_label("Write queues").fill("3")
    page.get_by_role("button", name="Change queue counts").click()
    expect(page.locator(".notice")).to_contain_text("3 read and 3 write queues")
    expect(page.get_by_test_id("route").locator("tbody td")).to_have_text(["broker-a", "3", "3", "RW (6)"])
    expect(page.get_by_test_id("queues").locator("tbody tr")).to_have_count(3)

    page.get_by_label("Read queues").fill("0")
    page.get_by_role("button", name="Change queue counts").click()
    expect(page.locator(".error")).to_contain_text("read queues must be a number from 1 to 1024")

    page.get_by_role("button", name="Delete topic").click()
    expect(page.locator(".notice")).to_contain_text("Topic DashNew deleted.")
    expect(page.get_by_test_id("topics")).not_to_contain_text("DashNew")
    page.screenshot(path=screenshots / "topic-deleted.png")


def test_the_group_shows_its_lag_and_resets_offsets_by_time(live: Live, page: Page, screenshots: Path) -> None:
    page.goto(live.url + "groups")
    row = page.get_by_test_id("groups").locator("tbody tr", has_text=GROUP)
    expect(row.locator("td").nth(1)).to_have_text("0")  # no member online any more
    expect(row.locator("td").last).to_have_text("3")  # three messages behind
    page.screenshot(path=screenshots / "groups.png")

    row.get_by_role("link", name=GROUP).click()
    expect(page.get_by_test_id("total-lag")).to_have_text("3")
    expect(page.get_by_test_id("members")).to_have_text("No member online.")
    lags = page.get_by_test_id("progress").locator("tbody tr td:nth-child(6)")
    assert sum(int(text) for text in lags.all_inner_texts()) == 3

    page.on("dialog", lambda dialog: dialog.accept())
    page.locator("select[name=topic]").select_option(TOPIC)
    page.get_by_label("To time").fill("2000-01-01T00:00")
    page.get_by_role("button", name="Reset offsets").click()
    expect(page.locator(".notice")).to_contain_text(f"Offsets of {GROUP} on {TOPIC} reset")
    expect(page.get_by_test_id("reset").locator("tbody tr td:nth-child(4)")).to_have_text(["0", "0"])
    expect(page.get_by_test_id("total-lag")).to_have_text("11")  # back to the first message
    page.screenshot(path=screenshots / "group-reset.png")


def test_search_messages_and_read_their_bodies(live: Live, page: Page, screenshots: Path) -> None:
    page.goto(live.url + "messages")
    page.locator("select[name=by]").select_option("key")
    page.get_by_label("Topic", exact=True).fill(TOPIC)
    page.get_by_label("Message id / key").fill("order-0")
    page.get_by_role("button", name="Search").click()
    found = page.get_by_test_id("found").locator("tbody tr")
    expect(found).to_have_count(1)
    expect(found).to_contain_text("TagA")
    found.get_by_role("link").click()
    expect(page.get_by_test_id("body")).to_have_text("order-0")
    expect(page.get_by_test_id("headers")).to_contain_text(live.first_order.msg_id)
    page.get_by_role("link", name="show as hex").click()
    expect(page.get_by_test_id("body")).to_have_text("00000000  6f 72 64 65 72 2d 30")  # "order-0"

    # a body holding HTML is shown as text, never run or rendered
    page.goto(live.url + f"message?id={live.html_message.offset_msg_id}")
    expect(page.get_by_test_id("body")).to_have_text('<script>document.title="pwned"</script><b>bold</b> & done')
    expect(page.get_by_test_id("body").locator("script, b")).to_have_count(0)
    assert "pwned" not in page.title()
    expect(page.get_by_test_id("properties")).to_contain_text("<red>")
    page.screenshot(path=screenshots / "message-html.png")

    # a binary body is shown in hex
    page.goto(live.url + f"message?id={live.binary_message.offset_msg_id}")
    expect(page.get_by_test_id("body")).to_have_attribute("data-kind", "hex")
    expect(page.get_by_test_id("body")).to_contain_text(BINARY_BODY[:5].hex(" "))

    # by the client's message id (with its topic), and by queue offset
    page.goto(live.url + f"messages?by=id&topic={TOPIC}&key={live.first_order.msg_id}")
    expect(page.get_by_test_id("found").locator("tbody tr")).to_have_count(1)
    queue = live.first_order.message_queue
    page.goto(
        live.url
        + f"messages?by=offset&topic={TOPIC}&broker={queue.broker_name}&queue={queue.queue_id}"
        + f"&offset={live.first_order.queue_offset}"
    )
    expect(page.get_by_test_id("found").locator("tbody tr")).to_contain_text("order-0")

    # the topic over a time range: every message of the last hour
    page.goto(live.url + "messages")
    page.locator("select[name=by]").select_option("time")
    page.get_by_label("Topic", exact=True).fill(TOPIC)
    expect(page.get_by_label("Message id / key")).to_be_hidden()  # the form shows what a search uses
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_test_id("found").locator("tbody tr")).to_have_count(11)
    page.screenshot(path=screenshots / "messages.png", full_page=True)

    page.goto(live.url + "messages?by=key&key=x")
    expect(page.locator(".error")).to_have_text("Search failed: give the topic")
    page.goto(live.url + f"messages?by=id&key={live.first_order.msg_id}")  # a client id without its topic
    expect(page.locator(".error")).to_contain_text("for a client message id, give its topic")
    page.goto(live.url + f"messages?by=id&key={live.first_order.offset_msg_id}")  # an offset id needs none
    expect(page.get_by_test_id("found").locator("tbody tr")).to_contain_text("order-0")


def test_send_a_test_message_and_view_it(live: Live, page: Page, screenshots: Path) -> None:
    page.goto(live.url + "send")
    page.get_by_label("Topic", exact=True).fill(SEND_TOPIC)
    page.get_by_label("Tags").fill("FromBrowser")
    page.get_by_label("Keys").fill("k1 k2")
    page.get_by_label("Body").fill("hello from the browser")
    page.get_by_label("Properties").fill("origin=dashboard")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_test_id("sent")).to_contain_text("SEND_OK")
    page.screenshot(path=screenshots / "sent.png")
    page.get_by_role("link", name="view the message").click()
    expect(page.get_by_test_id("body")).to_have_text("hello from the browser")
    expect(page.get_by_test_id("headers")).to_contain_text("FromBrowser")
    expect(page.get_by_test_id("properties")).to_contain_text("origin")

    page.goto(live.url + "send")
    page.get_by_label("Topic", exact=True).fill("bad topic name!")
    page.get_by_label("Body").fill("hello from the browser")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".error")).to_contain_text("Send failed")
    expect(page.get_by_label("Body")).to_have_value("hello from the browser")  # the form keeps what was typed
