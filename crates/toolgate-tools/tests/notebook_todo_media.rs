//! NotebookEdit, TodoWrite, images and PDFs, through the Gate.

mod common;

use common::*;
use serde_json::{Value, json};
use toolgate_protocol::{Concurrency, Content, ErrorCode};
use toolgate_tools::{FILE_TOOL_NAMES, FileToolsConfig, TodoStatus, todos};

fn notebook() -> Value {
    json!({
        "cells": [
            {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Intro\n"]},
            {"cell_type": "code", "id": "calc", "execution_count": 3, "metadata": {"tags": []},
             "source": ["x = 1\n", "x + 1"],
             "outputs": [{"output_type": "execute_result", "execution_count": 3, "metadata": {},
                          "data": {"text/plain": ["2"]}}]}
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5
    })
}

fn load(env: &Env) -> Value {
    serde_json::from_str(&env.read("nb.ipynb")).unwrap()
}

#[tokio::test]
async fn notebook_replace_insert_delete() {
    let env = Env::new();
    env.write(
        "nb.ipynb",
        &serde_json::to_string_pretty(&notebook()).unwrap(),
    );
    let e = env
        .err(
            "NotebookEdit",
            json!({"notebook_path": "nb.ipynb", "cell_id": "calc", "new_source": "y"}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "Read it first");
    env.ok("Read", json!({"file_path": "nb.ipynb"})).await;

    env.ok(
        "NotebookEdit",
        json!({"notebook_path": "nb.ipynb", "cell_id": "calc", "new_source": "y = 2\ny * 3"}),
    )
    .await;
    let nb = load(&env);
    let calc = &nb["cells"][1];
    assert_eq!(calc["source"], json!(["y = 2\n", "y * 3"]));
    assert_eq!(calc["outputs"], json!([]));
    assert_eq!(calc["execution_count"], Value::Null);
    assert_eq!(calc["metadata"], json!({"tags": []}));
    assert_eq!(nb["nbformat"], json!(4));
    assert_eq!(nb["metadata"]["kernelspec"]["name"], json!("python3"));
    assert!(
        env.read("nb.ipynb").starts_with("{\n \"cells\""),
        "Jupyter's one-space indent"
    );

    let e = env
        .err("NotebookEdit", json!({"notebook_path": "nb.ipynb", "cell_id": "intro", "new_source": "z", "edit_mode": "insert"}))
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "cell_type is required");
    env.ok("NotebookEdit", json!({"notebook_path": "nb.ipynb", "cell_id": "intro", "new_source": "import os", "cell_type": "code", "edit_mode": "insert"}))
        .await;
    env.ok("NotebookEdit", json!({"notebook_path": "nb.ipynb", "new_source": "# Top", "cell_type": "markdown", "edit_mode": "insert"}))
        .await;
    let nb = load(&env);
    let cells = nb["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    assert_eq!(cells[0]["source"], json!(["# Top"]));
    assert_eq!(cells[0]["cell_type"], json!("markdown"));
    assert!(cells[0].get("outputs").is_none());
    assert_eq!(cells[2]["source"], json!(["import os"]));
    assert_eq!(cells[2]["outputs"], json!([]));
    let ids: Vec<&str> = cells.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 4);
    assert!(ids.iter().all(|i| !i.is_empty()));

    env.ok("NotebookEdit", json!({"notebook_path": "nb.ipynb", "cell_id": "intro", "new_source": "", "edit_mode": "delete"}))
        .await;
    env.ok("NotebookEdit", json!({"notebook_path": "nb.ipynb", "cell_id": "cell-0", "new_source": "# First", "cell_type": "markdown"}))
        .await;
    let nb = load(&env);
    assert_eq!(nb["cells"].as_array().unwrap().len(), 3);
    assert_eq!(nb["cells"][0]["source"], json!(["# First"]));
    let e = env
        .err(
            "NotebookEdit",
            json!({"notebook_path": "nb.ipynb", "cell_id": "nope", "new_source": "x"}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "no cell with id");
}

#[tokio::test]
async fn notebook_edit_refuses_stale_reads_and_other_files() {
    let env = Env::new();
    env.write("nb.ipynb", &notebook().to_string());
    env.write("a.py", "x\n");
    env.ok("Read", json!({"file_path": "nb.ipynb"})).await;
    env.write(
        "nb.ipynb",
        &serde_json::to_string_pretty(&notebook()).unwrap(),
    );
    let e = env
        .err(
            "NotebookEdit",
            json!({"notebook_path": "nb.ipynb", "cell_id": "calc", "new_source": "y"}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "Read it again");
    let e = env
        .err(
            "NotebookEdit",
            json!({"notebook_path": "a.py", "cell_id": "calc", "new_source": "y"}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "not a Jupyter notebook");
}

#[tokio::test]
async fn todo_write_replaces_the_session_list() {
    let env = Env::new();
    assert!(todos(env.gate.session()).is_empty());
    env.ok(
        "TodoWrite",
        json!({"todos": [
            {"content": "Write tests", "status": "in_progress", "activeForm": "Writing tests"},
            {"content": "Ship", "status": "pending", "activeForm": "Shipping"}
        ]}),
    )
    .await;
    let list = todos(env.gate.session());
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].status, TodoStatus::InProgress);
    assert_eq!(list[1].active_form, "Shipping");
    let r = env
        .call("TodoWrite", json!({"todos": [{"content": "Ship", "status": "completed", "activeForm": "Shipping"}]}))
        .await;
    let out = output(&r);
    assert_eq!(
        out.structured.as_ref().unwrap()["oldTodos"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(todos(env.gate.session()).len(), 1);
    let e = env
        .err(
            "TodoWrite",
            json!({"todos": [
                {"content": "a", "status": "in_progress", "activeForm": "A"},
                {"content": "b", "status": "in_progress", "activeForm": "B"}
            ]}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "in_progress");
    assert_eq!(
        todos(env.gate.session()).len(),
        1,
        "a refused call changes nothing"
    );
    let e = env
        .err(
            "TodoWrite",
            json!({"todos": [{"content": "a", "status": "started", "activeForm": "A"}]}),
        )
        .await;
    assert_eq!(e.code, ErrorCode::InvalidInput);
}

#[tokio::test]
async fn specs_classify_readers_and_writers() {
    let env = Env::new();
    let names: Vec<String> = env
        .gate
        .registry()
        .entries()
        .iter()
        .map(|e| e.spec().name.clone())
        .collect();
    assert_eq!(names, FILE_TOOL_NAMES);
    for entry in env.gate.registry().entries() {
        let spec = entry.spec();
        assert_eq!(
            spec.input_schema["additionalProperties"],
            json!(false),
            "{}",
            spec.name
        );
        let reader = matches!(spec.name.as_str(), "Read" | "Glob" | "Grep");
        assert_eq!(
            spec.concurrency == Concurrency::Shared,
            reader,
            "{}",
            spec.name
        );
        if reader {
            assert!(spec.annotations.read_only, "{}", spec.name);
        }
    }
}

fn noise_png(w: u32, h: u32) -> Vec<u8> {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let img = image::RgbImage::from_fn(w, h, |_, _| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let b = seed.to_le_bytes();
        image::Rgb([b[0], b[1], b[2]])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

#[tokio::test]
async fn large_images_are_downscaled_or_refused() {
    let config = FileToolsConfig {
        image_max_bytes: 40_000,
        image_max_edge: 160,
        ..FileToolsConfig::default()
    };
    let env = Env::with(config, |b| b);
    let png = noise_png(400, 300);
    assert!(png.len() > 40_000);
    std::fs::write(env.path("noise.png"), &png).unwrap();
    let r = env.call("Read", json!({"file_path": "noise.png"})).await;
    let out = output(&r);
    let Content::Image { media_type, data } = &out.content[0] else {
        panic!("expected an image");
    };
    assert_eq!(media_type, "image/jpeg");
    use base64::Engine as _;
    let jpeg = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    assert!(jpeg.len() <= 40_000);
    let decoded = image::load_from_memory(&jpeg).unwrap();
    assert!(decoded.width() <= 160 && decoded.height() <= 160);
    assert!(out.joined_text().contains("downscaled"));

    let tiny = FileToolsConfig {
        image_max_bytes: 100,
        ..FileToolsConfig::default()
    };
    let env = Env::with(tiny, |b| b);
    std::fs::write(env.path("noise.png"), &png).unwrap();
    let e = env.err("Read", json!({"file_path": "noise.png"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "over the 100-byte limit");
}

fn pdf(pages: &[&str]) -> Vec<u8> {
    use lopdf::content::{Content as PdfContent, Operation};
    use lopdf::{Document, Object, Stream, dictionary};
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc
        .add_object(dictionary! {"Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Courier"});
    let resources_id = doc.add_object(dictionary! {"Font" => dictionary! {"F1" => font_id}});
    let mut kids = Vec::new();
    for text in pages {
        let content = PdfContent {
            operations: vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 24.into()]),
                Operation::new("Td", vec![100.into(), 600.into()]),
                Operation::new("Tj", vec![Object::string_literal(*text)]),
                Operation::new("ET", vec![]),
            ],
        };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page_id = doc.add_object(
            dictionary! {"Type" => "Page", "Parent" => pages_id, "Contents" => content_id},
        );
        kids.push(page_id.into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => count, "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! {"Type" => "Catalog", "Pages" => pages_id});
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

#[tokio::test]
async fn pdf_text_per_page() {
    let env = Env::new();
    std::fs::write(
        env.path("three.pdf"),
        pdf(&["Alpha page", "Beta page", "Gamma page"]),
    )
    .unwrap();
    let out = env.ok("Read", json!({"file_path": "three.pdf"})).await;
    assert!(out.contains("(3 pages)"), "{out}");
    assert!(
        out.contains("<page number=\"1\">") && out.contains("Alpha page"),
        "{out}"
    );
    assert!(out.contains("Gamma page"));
    let out = env
        .ok("Read", json!({"file_path": "three.pdf", "pages": "2"}))
        .await;
    assert!(
        out.contains("Beta page") && !out.contains("Alpha page"),
        "{out}"
    );
    let e = env
        .err("Read", json!({"file_path": "three.pdf", "pages": "4"}))
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "has 3 pages");

    let many: Vec<String> = (1..=12).map(|i| format!("Page number {i}")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    std::fs::write(env.path("long.pdf"), pdf(&refs)).unwrap();
    let e = env.err("Read", json!({"file_path": "long.pdf"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "send `pages`");
    let out = env
        .ok("Read", json!({"file_path": "long.pdf", "pages": "11-12"}))
        .await;
    assert!(out.contains("Page number 12"), "{out}");
    let e = env
        .err("Read", json!({"file_path": "long.pdf", "pages": "1-25"}))
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "at most 20 pages");

    std::fs::write(
        env.path("broken.pdf"),
        b"%PDF-1.4\nthis is not really a pdf\n",
    )
    .unwrap();
    let e = env.err("Read", json!({"file_path": "broken.pdf"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "could not be read as a PDF");
}
