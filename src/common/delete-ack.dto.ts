import { ApiProperty } from '@nestjs/swagger';

/** What a DELETE answers: `data` = `{ id, deleted: true }`. */
export class DeleteAcknowledgementDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: [true] }) deleted!: true;
}
