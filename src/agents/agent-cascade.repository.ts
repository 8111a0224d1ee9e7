import { Injectable } from '@nestjs/common';
import { and, eq, sql } from 'drizzle-orm';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { chatbots } from '../database/chatbots.table';
import { triggers } from '../database/triggers.table';

/** Why a trigger or chatbot was switched off by its agent; reactivation restores only these rows. */
export const CASCADE_REASON = {
  agentDeactivated: 'agent_deactivated',
  agentDeleted: 'agent_deleted',
} as const;

/** Webhook registration state of a trigger (`webhook_status`); null means the trigger has no external webhook. */
const WEBHOOK_STATUS = { active: 'active', paused: 'paused', tornDown: 'torn_down' } as const;

export interface CascadeResult {
  triggers: string[];
  chatbots: string[];
}

/**
 * The SQL of the agent cascades (what trashing, restoring and deleting an agent
 * also changes). Always run
 * inside the transaction that changes the agent, after its row is locked.
 */
@Injectable()
export class AgentCascadeRepository {
  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {}

  /**
   * active → inactive: switch off the triggers and chatbots that are on, and
   * record why. Webhooks are toggled in place (`active` → `paused`), keeping
   * `webhook_id`. Rows already off (someone switched them off) are untouched,
   * so reactivation will leave them off.
   */
  async pauseForAgentDeactivation(orgId: string, agentId: string, now: Date): Promise<CascadeResult> {
    const pausedTriggers = await this.txHost.tx
      .update(triggers)
      .set({
        isActive: false,
        deactivatedReason: CASCADE_REASON.agentDeactivated,
        deactivatedAt: now,
        webhookStatus: sql`case when ${triggers.webhookStatus} = ${WEBHOOK_STATUS.active} then ${WEBHOOK_STATUS.paused} else ${triggers.webhookStatus} end`,
        updatedAt: now,
      })
      .where(and(eq(triggers.orgId, orgId), eq(triggers.agentId, agentId), eq(triggers.isActive, true)))
      .returning({ id: triggers.id });
    const pausedChatbots = await this.txHost.tx
      .update(chatbots)
      .set({ isActive: false, deactivatedReason: CASCADE_REASON.agentDeactivated, deactivatedAt: now, updatedAt: now })
      .where(and(eq(chatbots.orgId, orgId), eq(chatbots.agentId, agentId), eq(chatbots.isActive, true)))
      .returning({ id: chatbots.id });
    return { triggers: pausedTriggers.map((row) => row.id), chatbots: pausedChatbots.map((row) => row.id) };
  }

  /** inactive → active: restores exactly the rows the deactivation cascade switched off. */
  async resumeAfterAgentActivation(orgId: string, agentId: string, now: Date): Promise<CascadeResult> {
    const resumedTriggers = await this.txHost.tx
      .update(triggers)
      .set({
        isActive: true,
        deactivatedReason: null,
        deactivatedAt: null,
        webhookStatus: sql`case when ${triggers.webhookStatus} = ${WEBHOOK_STATUS.paused} then ${WEBHOOK_STATUS.active} else ${triggers.webhookStatus} end`,
        updatedAt: now,
      })
      .where(
        and(eq(triggers.orgId, orgId), eq(triggers.agentId, agentId), eq(triggers.deactivatedReason, CASCADE_REASON.agentDeactivated)),
      )
      .returning({ id: triggers.id });
    const resumedChatbots = await this.txHost.tx
      .update(chatbots)
      .set({ isActive: true, deactivatedReason: null, deactivatedAt: null, updatedAt: now })
      .where(
        and(eq(chatbots.orgId, orgId), eq(chatbots.agentId, agentId), eq(chatbots.deactivatedReason, CASCADE_REASON.agentDeactivated)),
      )
      .returning({ id: chatbots.id });
    return { triggers: resumedTriggers.map((row) => row.id), chatbots: resumedChatbots.map((row) => row.id) };
  }

  /**
   * DELETE (soft): triggers that are on are switched off with reason
   * `agent_deleted`; every external webhook of the agent's triggers is torn
   * down (`torn_down`, `webhook_id` cleared: a restore must register anew);
   * chatbots that are on are paused. Rows already off keep their reason.
   */
  async tearDownForAgentDeletion(orgId: string, agentId: string, now: Date): Promise<CascadeResult> {
    const hasLiveWebhook = sql`(${triggers.webhookStatus} is not null and ${triggers.webhookStatus} <> ${WEBHOOK_STATUS.tornDown})`;
    const touchedTriggers = await this.txHost.tx
      .update(triggers)
      .set({
        isActive: false,
        deactivatedReason: sql`case when ${triggers.isActive} then ${CASCADE_REASON.agentDeleted} else ${triggers.deactivatedReason} end`,
        deactivatedAt: sql`case when ${triggers.isActive} then ${now.toISOString()}::timestamptz else ${triggers.deactivatedAt} end`,
        webhookStatus: sql`case when ${hasLiveWebhook} then ${WEBHOOK_STATUS.tornDown} else ${triggers.webhookStatus} end`,
        webhookId: sql`case when ${hasLiveWebhook} then null else ${triggers.webhookId} end`,
        updatedAt: now,
      })
      .where(and(eq(triggers.orgId, orgId), eq(triggers.agentId, agentId), sql`(${triggers.isActive} or ${hasLiveWebhook})`))
      .returning({ id: triggers.id });
    const pausedChatbots = await this.txHost.tx
      .update(chatbots)
      .set({ isActive: false, deactivatedReason: CASCADE_REASON.agentDeleted, deactivatedAt: now, updatedAt: now })
      .where(and(eq(chatbots.orgId, orgId), eq(chatbots.agentId, agentId), eq(chatbots.isActive, true)))
      .returning({ id: chatbots.id });
    return { triggers: touchedTriggers.map((row) => row.id), chatbots: pausedChatbots.map((row) => row.id) };
  }
}
