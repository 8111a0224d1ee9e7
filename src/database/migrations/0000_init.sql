CREATE TABLE "agents" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"handle" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"model" text,
	"instructions" text,
	"instructions_html" text,
	"is_active" boolean DEFAULT true NOT NULL,
	"color" text DEFAULT '#6366f1',
	"avatar" text,
	"include_system_prompt" boolean DEFAULT true NOT NULL,
	"tools" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"connectors" text[] DEFAULT '{}'::text[] NOT NULL,
	"sub_agents" text[] DEFAULT '{}'::text[] NOT NULL,
	"data_sources" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"pending_trigger_hint" jsonb,
	"deactivated_reason" text,
	"deactivated_at" timestamp with time zone,
	"deleted_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"label" text NOT NULL,
	"lookup_prefix" text NOT NULL,
	"token_hash" text NOT NULL,
	"scopes" text[] NOT NULL,
	"expires_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"last_used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "chatbots" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"public_id" text NOT NULL,
	"name" text NOT NULL,
	"agent_id" text,
	"is_active" boolean DEFAULT true NOT NULL,
	"allow_write_tools" boolean DEFAULT false NOT NULL,
	"allowed_domains" text[] DEFAULT '{}'::text[] NOT NULL,
	"theme" jsonb,
	"welcome_message" text,
	"deactivated_reason" text,
	"deactivated_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "chatbots_public_id_unique" UNIQUE("public_id")
);
--> statement-breakpoint
CREATE TABLE "connectors" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"type" text NOT NULL,
	"name" text NOT NULL,
	"status" text DEFAULT 'connected' NOT NULL,
	"status_reason" text,
	"is_active" boolean DEFAULT true NOT NULL,
	"tools" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "conversations" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"title" text,
	"source" text NOT NULL,
	"agent_id" text,
	"model" text,
	"autonomous" boolean DEFAULT false NOT NULL,
	"is_onboarding" boolean DEFAULT false NOT NULL,
	"is_simulation" boolean DEFAULT false NOT NULL,
	"conversation_number" integer,
	"parent_conversation_id" text,
	"credits_used" integer DEFAULT 0 NOT NULL,
	"metadata" jsonb,
	"trigger_payload" jsonb,
	"ticket_ids" text[] DEFAULT '{}'::text[] NOT NULL,
	"message_count" integer DEFAULT 0 NOT NULL,
	"last_message_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "custom_tools" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"name" text NOT NULL,
	"label" text NOT NULL,
	"description" text NOT NULL,
	"type" text DEFAULT 'read' NOT NULL,
	"method" text NOT NULL,
	"url" text NOT NULL,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"body_template" text,
	"parameters" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"response_mapping" text,
	"auth_type" text DEFAULT 'none' NOT NULL,
	"auth_header_name" text,
	"credentials_ciphertext" text,
	"group" jsonb,
	"is_active" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "documents" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"source_id" text NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "idempotency_records" (
	"org_id" text NOT NULL,
	"key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"status" integer NOT NULL,
	"body" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "idempotency_records_org_id_key_pk" PRIMARY KEY("org_id","key")
);
--> statement-breakpoint
CREATE TABLE "members" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"user_id" text NOT NULL,
	"name" text,
	"email" text NOT NULL,
	"role" text NOT NULL,
	"is_active" boolean DEFAULT true NOT NULL,
	"last_login_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"conversation_id" text NOT NULL,
	"role" text NOT NULL,
	"content" text NOT NULL,
	"tool_calls" jsonb,
	"tool_call_id" text,
	"tool_name" text,
	"connector_type" text,
	"model" text,
	"created_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "orgs" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"slug" text NOT NULL,
	"plan" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"credits" jsonb NOT NULL,
	"limits" jsonb NOT NULL,
	"trial" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "orgs_slug_unique" UNIQUE("slug")
);
--> statement-breakpoint
CREATE TABLE "sources" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"type" text NOT NULL,
	"name" text NOT NULL,
	"connector_id" text,
	"connector_type" text,
	"sync_status" text DEFAULT 'ready' NOT NULL,
	"last_sync_at" timestamp with time zone,
	"document_count" integer,
	"is_active" boolean DEFAULT true NOT NULL,
	"config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "triggers" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"agent_id" text,
	"connector_id" text,
	"connector_type" text NOT NULL,
	"event" text NOT NULL,
	"is_active" boolean DEFAULT true NOT NULL,
	"conditions" jsonb,
	"settings" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"schedule" jsonb,
	"webhook_id" text,
	"webhook_status" text,
	"deactivated_reason" text,
	"deactivated_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "agents" ADD CONSTRAINT "agents_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chatbots" ADD CONSTRAINT "chatbots_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "connectors" ADD CONSTRAINT "connectors_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "custom_tools" ADD CONSTRAINT "custom_tools_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "members" ADD CONSTRAINT "members_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sources" ADD CONSTRAINT "sources_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "triggers" ADD CONSTRAINT "triggers_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agents_org_idx" ON "agents" USING btree ("org_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "agents_org_handle_unique" ON "agents" USING btree ("org_id",lower("handle")) WHERE "agents"."deleted_at" is null;--> statement-breakpoint
CREATE INDEX "agents_deleted_at_idx" ON "agents" USING btree ("deleted_at") WHERE "agents"."deleted_at" is not null;--> statement-breakpoint
CREATE INDEX "agents_sub_agents_gin" ON "agents" USING gin ("sub_agents");--> statement-breakpoint
CREATE INDEX "api_keys_lookup_prefix_idx" ON "api_keys" USING btree ("lookup_prefix");--> statement-breakpoint
CREATE INDEX "api_keys_org_idx" ON "api_keys" USING btree ("org_id","id");--> statement-breakpoint
CREATE INDEX "chatbots_org_idx" ON "chatbots" USING btree ("org_id","id");--> statement-breakpoint
CREATE INDEX "chatbots_org_agent_idx" ON "chatbots" USING btree ("org_id","agent_id");--> statement-breakpoint
CREATE INDEX "connectors_org_idx" ON "connectors" USING btree ("org_id","id");--> statement-breakpoint
CREATE INDEX "conversations_org_idx" ON "conversations" USING btree ("org_id","id");--> statement-breakpoint
CREATE INDEX "conversations_org_source_idx" ON "conversations" USING btree ("org_id","source","id");--> statement-breakpoint
CREATE INDEX "conversations_org_agent_idx" ON "conversations" USING btree ("org_id","agent_id","id");--> statement-breakpoint
CREATE INDEX "conversations_org_parent_idx" ON "conversations" USING btree ("org_id","parent_conversation_id","id");--> statement-breakpoint
CREATE INDEX "conversations_org_number_idx" ON "conversations" USING btree ("org_id","conversation_number");--> statement-breakpoint
CREATE INDEX "conversations_org_model_idx" ON "conversations" USING btree ("org_id","model","id");--> statement-breakpoint
CREATE INDEX "conversations_org_last_message_idx" ON "conversations" USING btree ("org_id","last_message_at");--> statement-breakpoint
CREATE INDEX "conversations_org_created_idx" ON "conversations" USING btree ("org_id","created_at");--> statement-breakpoint
CREATE INDEX "conversations_ticket_ids_gin" ON "conversations" USING gin ("ticket_ids");--> statement-breakpoint
CREATE INDEX "conversations_metadata_gin" ON "conversations" USING gin ("metadata" jsonb_path_ops);--> statement-breakpoint
CREATE INDEX "custom_tools_org_idx" ON "custom_tools" USING btree ("org_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "custom_tools_org_name_unique" ON "custom_tools" USING btree ("org_id","name");--> statement-breakpoint
CREATE INDEX "documents_source_idx" ON "documents" USING btree ("org_id","source_id","id");--> statement-breakpoint
CREATE INDEX "idempotency_records_expires_idx" ON "idempotency_records" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "members_org_idx" ON "members" USING btree ("org_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "members_org_user_unique" ON "members" USING btree ("org_id","user_id");--> statement-breakpoint
CREATE INDEX "messages_conversation_idx" ON "messages" USING btree ("org_id","conversation_id","id");--> statement-breakpoint
CREATE INDEX "sources_org_idx" ON "sources" USING btree ("org_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "sources_org_upload_unique" ON "sources" USING btree ("org_id") WHERE "sources"."type" = 'upload';--> statement-breakpoint
CREATE INDEX "triggers_org_idx" ON "triggers" USING btree ("org_id","id");--> statement-breakpoint
CREATE INDEX "triggers_org_agent_idx" ON "triggers" USING btree ("org_id","agent_id");