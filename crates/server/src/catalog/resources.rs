//! Resources (2025-11-25 `server/resources`): static resources ([`ResourceDef`]), resource
//! templates ([`ResourceTemplateDef`]), their contents ([`ResourceContents`]), and the
//! `resources/list`, `resources/templates/list` and `resources/read` handlers.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_tasks_engine::Context;
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::mcp::{Content, Meta};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Catalog, Work};
use super::uri_template::UriTemplate;

/// The JSON-RPC code of "resource not found" (2025-11-25 resources page: `-32002`, with the
/// URI in `data`).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// The error `resources/read` answers for a URI no resource or template serves:
/// `{"code": -32002, "message": "Resource not found", "data": {"uri": uri}}`. Template read
/// handlers return it for variables that name nothing.
pub fn resource_not_found(uri: &str) -> RpcError {
    RpcError::new(RESOURCE_NOT_FOUND, "Resource not found").with_data(json!({ "uri": uri }))
}

/// Schema `Resource`: one entry of `resources/list`. `icons` is not modelled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// Name for programmatic use.
    pub name: String,
    /// Name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size of the raw content in bytes, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Schema `Annotations`, kept as raw JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Resource `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Schema `ResourceTemplate`: one entry of `resources/templates/list`. `icons` is not
/// modelled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The RFC 6570 template, such as `test://template/{id}/data`.
    pub uri_template: String,
    /// Name for programmatic use.
    pub name: String,
    /// Name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resources are, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type of every matching resource, if they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Schema `Annotations`, kept as raw JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Template `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Schema `TextResourceContents` or `BlobResourceContents`: what `resources/read` returns
/// for one URI, and what an embedded resource (`{"type": "resource"}` content) carries.
///
/// On the wire: `{"uri", "mimeType"?, "text"}` or `{"uri", "mimeType"?, "blob"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    Text {
        /// The URI these contents belong to.
        uri: String,
        /// MIME type, if known.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// Binary contents.
    Blob {
        /// The URI these contents belong to.
        uri: String,
        /// MIME type, if known.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The bytes, base64-encoded.
        blob: String,
    },
}

impl ResourceContents {
    /// Text contents of `uri`, without a MIME type.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> ResourceContents {
        ResourceContents::Text { uri: uri.into(), mime_type: None, text: text.into() }
    }

    /// Binary contents of `uri`, already base64-encoded, without a MIME type.
    pub fn blob(uri: impl Into<String>, base64: impl Into<String>) -> ResourceContents {
        ResourceContents::Blob { uri: uri.into(), mime_type: None, blob: base64.into() }
    }

    /// The same contents with `mimeType` set.
    #[must_use]
    pub fn mime_type(mut self, value: impl Into<String>) -> ResourceContents {
        let (ResourceContents::Text { mime_type, .. } | ResourceContents::Blob { mime_type, .. }) = &mut self;
        *mime_type = Some(value.into());
        self
    }

    /// The contents as an embedded-resource content block:
    /// `{"type": "resource", "resource": {...}}`, for tool results and prompt messages.
    pub fn into_content(self) -> Content {
        Content::Resource { resource: serde_json::to_value(self).unwrap_or(Value::Null), annotations: None, meta: None }
    }
}

/// What a read handler is asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadRequest {
    /// The URI as the client sent it.
    pub uri: String,
    /// For a template, the values of its variables in `uri` (percent-decoded); empty for a
    /// static resource.
    pub variables: BTreeMap<String, String>,
}

impl ReadRequest {
    /// The value of template variable `name`, if the template has it.
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables.get(name).map(String::as_str)
    }
}

type ReadFuture = Pin<Box<dyn Future<Output = Result<Vec<ResourceContents>, RpcError>> + Send>>;
type ReadFn = Arc<dyn Fn(ReadRequest, Context) -> ReadFuture + Send + Sync>;

fn boxed_reader<F, Fut>(read: F) -> ReadFn
where
    F: Fn(ReadRequest, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourceContents>, RpcError>> + Send + 'static,
{
    Arc::new(move |request, ctx| Box::pin(read(request, ctx)))
}

/// A static resource as served: its descriptor and the handler that reads it.
///
/// ```
/// # use mcp_tasks_server::{ResourceContents, ResourceDef};
/// let readme = ResourceDef::new("docs://readme", "readme", |request| async move {
///     Ok(vec![ResourceContents::text(request.uri, "Read me.").mime_type("text/plain")])
/// })
/// .description("The project's README")
/// .mime_type("text/plain");
/// ```
#[derive(Clone)]
pub struct ResourceDef {
    descriptor: Resource,
    read: ReadFn,
}

impl ResourceDef {
    /// A resource at `uri` named `name`, read by `read`.
    pub fn new<F, Fut>(uri: impl Into<String>, name: impl Into<String>, read: F) -> ResourceDef
    where
        F: Fn(ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, RpcError>> + Send + 'static,
    {
        ResourceDef::asking(uri, name, move |request, _| read(request))
    }

    /// A resource whose `read` may ask the client while it reads ([`Context::elicit`],
    /// [`Context::request_named`]…): in 2025-11-25 as a request to the client, in
    /// 2026-07-28 as rounds of a Multi Round-Trip Request (`InputRequiredResult`).
    pub fn asking<F, Fut>(uri: impl Into<String>, name: impl Into<String>, read: F) -> ResourceDef
    where
        F: Fn(ReadRequest, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, RpcError>> + Send + 'static,
    {
        let descriptor = Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
            meta: None,
        };
        ResourceDef { descriptor, read: boxed_reader(read) }
    }

    /// Sets the display name.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> ResourceDef {
        self.descriptor.title = Some(title.into());
        self
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> ResourceDef {
        self.descriptor.description = Some(description.into());
        self
    }

    /// Sets the MIME type shown by `resources/list`.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> ResourceDef {
        self.descriptor.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the size in bytes shown by `resources/list`.
    #[must_use]
    pub fn size(mut self, size: u64) -> ResourceDef {
        self.descriptor.size = Some(size);
        self
    }

    /// What `resources/list` shows.
    pub fn descriptor(&self) -> &Resource {
        &self.descriptor
    }
}

/// A resource template as served: its descriptor, the parsed template, and the handler
/// that reads a matching URI (it receives the template's variables).
///
/// ```
/// # use mcp_tasks_server::{ResourceContents, ResourceTemplateDef, UriTemplate};
/// let template = UriTemplate::parse("users://{id}/profile").expect("a valid template");
/// let profiles = ResourceTemplateDef::new(template, "profile", |request| async move {
///     let id = request.variable("id").unwrap_or_default().to_owned();
///     Ok(vec![ResourceContents::text(request.uri, format!("user {id}"))])
/// });
/// ```
#[derive(Clone)]
pub struct ResourceTemplateDef {
    descriptor: ResourceTemplate,
    template: UriTemplate,
    read: ReadFn,
}

impl ResourceTemplateDef {
    /// A template named `name` whose matching URIs are read by `read`.
    pub fn new<F, Fut>(template: UriTemplate, name: impl Into<String>, read: F) -> ResourceTemplateDef
    where
        F: Fn(ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, RpcError>> + Send + 'static,
    {
        ResourceTemplateDef::asking(template, name, move |request, _| read(request))
    }

    /// A template whose `read` may ask the client, as [`ResourceDef::asking`].
    pub fn asking<F, Fut>(template: UriTemplate, name: impl Into<String>, read: F) -> ResourceTemplateDef
    where
        F: Fn(ReadRequest, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, RpcError>> + Send + 'static,
    {
        let descriptor = ResourceTemplate {
            uri_template: template.as_str().to_owned(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            meta: None,
        };
        ResourceTemplateDef { descriptor, template, read: boxed_reader(read) }
    }

    /// Sets the display name.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> ResourceTemplateDef {
        self.descriptor.title = Some(title.into());
        self
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> ResourceTemplateDef {
        self.descriptor.description = Some(description.into());
        self
    }

    /// Sets the MIME type every matching resource has.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> ResourceTemplateDef {
        self.descriptor.mime_type = Some(mime_type.into());
        self
    }

    /// What `resources/templates/list` shows.
    pub fn descriptor(&self) -> &ResourceTemplate {
        &self.descriptor
    }

    /// The parsed template.
    pub fn template(&self) -> &UriTemplate {
        &self.template
    }
}

/// The `params` of `resources/read`, `resources/subscribe` and `resources/unsubscribe`.
#[derive(Deserialize)]
pub(crate) struct UriParams {
    pub(crate) uri: String,
}

/// `resources/list`: every static resource, by URI, in one page.
pub(crate) fn list(catalog: &Catalog) -> Value {
    let resources: Vec<&Resource> = catalog.resources.values().map(ResourceDef::descriptor).collect();
    json!({ "resources": resources })
}

/// `resources/templates/list`: every template, in registration order, in one page.
pub(crate) fn list_templates(catalog: &Catalog) -> Value {
    let templates: Vec<&ResourceTemplate> = catalog.templates.iter().map(ResourceTemplateDef::descriptor).collect();
    json!({ "resourceTemplates": templates })
}

/// `resources/read`: a static resource with exactly this URI, else the first template (in
/// registration order) that matches it, else `-32002`; its handler asks through `ctx`.
pub(crate) async fn read(catalog: &Catalog, params: UriParams, ctx: Context) -> Result<Value, RpcError> {
    reading(catalog, &params.uri)?(ctx).await
}

/// The `resources/read` of `uri`, to run with a context: the work of the request, which in
/// 2026-07-28 may outlive a round.
///
/// # Errors
/// `-32002` for a URI no resource or template serves.
pub(crate) fn reading(
    catalog: &Catalog,
    uri: &str,
) -> Result<Work, RpcError> {
    let (read, request) = catalog.reader(uri).ok_or_else(|| resource_not_found(uri))?;
    Ok(Box::new(move |ctx: Context| -> Pin<Box<dyn Future<Output = Result<Value, RpcError>> + Send>> {
        Box::pin(async move {
            let contents = read(request, ctx).await?;
            Ok(json!({ "contents": contents }))
        })
    }))
}

impl Catalog {
    /// Whether some resource or template serves `uri`.
    pub(crate) fn serves(&self, uri: &str) -> bool {
        self.upstream_offers().resources
            || self.resources.contains_key(uri) || self.templates.iter().any(|def| def.template.match_uri(uri).is_some())
    }

    fn reader(&self, uri: &str) -> Option<(ReadFn, ReadRequest)> {
        if let Some(def) = self.resources.get(uri) {
            return Some((Arc::clone(&def.read), ReadRequest { uri: uri.to_owned(), variables: BTreeMap::new() }));
        }
        self.templates.iter().find_map(|def| {
            let variables = def.template.match_uri(uri)?;
            Some((Arc::clone(&def.read), ReadRequest { uri: uri.to_owned(), variables }))
        })
    }
}
